package dev.muon.examples.study;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the second study has left to run, estimated from the protocol's runs and those finished, priced at
 * {@link SecondPlan#cpuSeconds} (the first study's measured CPU-seconds per step, with two runs at a time on two
 * cores). The protocol's runs are counted once, by playing {@link SecondPlan} to its end with made-up final losses
 * whose minimum is at the middle of every grid, so that no grid grows at an edge: 569 runs, 116,295 CPU-seconds (the
 * timing pass, 1,000 more, is not a sweep run). What is left is that less the finished runs, and never less than the
 * runs ready now; each lr-edge extension the results call for adds 3 runs that the estimate does not foresee.
 *
 * <p>Why not play the plan on from the real results: a grid half run, with made-up losses for its other half,
 * would pick its best among the runs made so far (the plan runs a grid from its smallest lr up) and so foresee an
 * extension at the low edge that the finished grid would rarely ask for.
 */
final class SecondProjection {
    /** More rounds than any plan needs: each round finishes at least one grid or stage. */
    private static final int MAX_ROUNDS = 1_000;
    private static final Left PROTOCOL = play();

    private SecondProjection() {
    }

    /**
     * Runs and their cost.
     *
     * @param runs       runs
     * @param cpuSeconds their CPU-seconds
     */
    record Left(int runs, double cpuSeconds) {
        /** The CPU-seconds in hours. */
        double cpuHours() {
            return cpuSeconds / 3600;
        }
    }

    /** The protocol's runs, without lr-edge extensions. */
    static Left protocol() {
        return PROTOCOL;
    }

    /**
     * What is left once {@code finished} have run.
     *
     * @param finished the finished runs' cells
     * @param ready    the cells the plan asks for now
     * @return the estimate
     */
    static Left left(Collection<SecondCell> finished, List<SecondCell> ready) {
        double done = finished.stream().mapToDouble(SecondPlan::cpuSeconds).sum();
        double now = ready.stream().mapToDouble(SecondPlan::cpuSeconds).sum();
        return new Left(Math.max(PROTOCOL.runs() - finished.size(), ready.size()),
                Math.max(PROTOCOL.cpuSeconds() - done, now));
    }

    /** The plan played from no results, each grid's made-up losses lowest at the middle of its lr values. */
    private static Left play() {
        Map<String, Double> finals = new HashMap<>();
        int runs = 0;
        double seconds = 0;
        for (int round = 0; round < MAX_ROUNDS; round++) {
            List<SecondCell> next = SecondPlan.pending(finals);
            if (next.isEmpty()) {
                return new Left(runs, seconds);
            }
            // The lr range each grid asks for in this round, by arm, corpus and budget: every other axis of a grid
            // (beta2 and weight decay, the AdamW side, Hyperball's radius) shares its lr values.
            Map<String, double[]> range = new HashMap<>();
            for (SecondCell c : next) {
                double lr = SecondPlan.lrOf(c);
                range.merge(grid(c), new double[] {lr, lr},
                        (a, b) -> new double[] {Math.min(a[0], b[0]), Math.max(a[1], b[1])});
            }
            for (SecondCell c : next) {
                double[] r = range.get(grid(c));
                double log = Math.log(SecondPlan.lrOf(c) / Math.sqrt(r[0] * r[1]));
                finals.put(c.key(), 2 + log * log);
                runs++;
                seconds += SecondPlan.cpuSeconds(c);
            }
        }
        throw new IllegalStateException("the plan asked for runs in more than " + MAX_ROUNDS + " rounds");
    }

    private static String grid(SecondCell c) {
        return c.arm().id() + "|" + c.corpus() + "|" + c.steps();
    }
}
