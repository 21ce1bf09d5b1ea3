package dev.muon.examples.study;

import dev.muon.examples.DataError;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.DoubleSummaryStatistics;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.DoubleStream;

/**
 * The second study's analysis, as its protocol decided it before the first run (docs/examples.md, "The target and
 * the statistics"): per stage (a corpus at a budget) the target is the highest final validation loss among tuned
 * AdamW's confirmation runs (of those that did not diverge: a diverged AdamW run has no final loss, and counts as
 * censored like any other); each confirmation run's steps to it are interpolated between evaluations, a run that
 * never reaches it (or diverged, even after reaching it) counting as the budget; two arms are compared paired by
 * seed on {@code d = ln(steps_X / steps_Y)}, the ratio {@code exp(mean d)} with its 95 % t-interval and a two-sided
 * paired t-test, Holm's correction within each family of tests; the drift of {@code muon} against {@code adamw} over
 * GCIDE's three budgets is the least-squares slope of {@code d} on {@code log2(steps of the budget)}.
 *
 * <p>The analysis reads only the confirmation runs of each arm's tuned configuration, which {@link SecondPlan}
 * finds from the tuning runs; a comparison whose runs are not all there yet is listed as pending, and counts in
 * Holm's correction with p = 1, so that a partial report never adjusts less than the finished one will.
 */
final class SecondAnalysis {
    /** The report's name in the results folder. */
    static final String FILE = "analysis.md";
    /** The protocol's level. */
    static final double ALPHA = StudyStats.ALPHA;
    /** A ratio whose 95 % interval lies inside [{@value}, 1/{@value}] is called equivalent within 10 %. */
    static final double EQUIVALENCE = 0.9;

    private SecondAnalysis() {
    }

    /** The families of tests decided in advance, each corrected by Holm's method on its own. */
    enum Family {
        /** {@code muon} against {@code adamw} at every stage. */
        PRIMARY,
        /** {@code muon} against {@code adamw_2lr} at every stage: is the gain Muon's or two lrs'. */
        CONTROL,
        /** {@code adamw_2lr} against {@code adamw} at every stage: what two lrs alone give. */
        TWO_LRS,
        /** Each variant against {@code muon} at GCIDE {@code B1}. */
        VARIANTS;

        /** The family's heading in the report. */
        String title() {
            return switch (this) {
                case PRIMARY -> "MuonAdamW against AdamW";
                case CONTROL -> "MuonAdamW against AdamW-2lr";
                case TWO_LRS -> "AdamW-2lr against AdamW";
                case VARIANTS -> "variants against MuonAdamW";
            };
        }

        /** The planned comparisons, arm X against arm Y at a stage, in the report's order. */
        List<Planned> planned() {
            List<Planned> out = new ArrayList<>();
            switch (this) {
                case PRIMARY -> SecondPlan.STAGES.forEach(s -> out.add(new Planned(s, SecondArm.MUON,
                        SecondArm.ADAMW)));
                case CONTROL -> SecondPlan.STAGES.forEach(s -> out.add(new Planned(s, SecondArm.MUON,
                        SecondArm.ADAMW_2LR)));
                case TWO_LRS -> SecondPlan.STAGES.forEach(s -> out.add(new Planned(s, SecondArm.ADAMW_2LR,
                        SecondArm.ADAMW)));
                case VARIANTS -> SecondArm.VARIANTS.forEach(v -> out.add(new Planned(SecondPlan.STAGES.get(0), v,
                        SecondArm.MUON)));
                default -> throw new AssertionError(this);
            }
            return out;
        }
    }

    /** One comparison the protocol plans: arm {@code x} against arm {@code y} at {@code stage}. */
    record Planned(SecondPlan.Stage stage, SecondArm x, SecondArm y) {
    }

    /**
     * A stage's confirmation runs by arm, each list in {@link SecondPlan#CONFIRMATION_SEEDS}' order, and the
     * target; an arm is missing until all its confirmation runs are there, the target NaN until AdamW's are.
     *
     * @param stage  the stage
     * @param tuned  each arm's tuned configuration (seed 0) found so far
     * @param atEdge the arms among them whose tuned lr is still at an edge of its grid ({@link SecondPlan.Progress})
     * @param runs   the confirmation runs of each arm that has all of them
     * @param target the highest final validation loss of AdamW's confirmation runs that did not diverge; NaN if not
     *               all are there, or if every one diverged
     */
    record StageRuns(SecondPlan.Stage stage, Map<SecondArm, SecondCell> tuned, Set<SecondArm> atEdge,
                     Map<SecondArm, List<SecondResult>> runs, double target) {
        /**
         * The steps to the target of an arm's confirmation runs, a run that does not reach it, or diverged,
         * counted as the budget.
         *
         * @param arm the arm, whose runs are there
         * @return the steps, in seed order
         * @throws DataError naming the run, if one is at the target before training (the target
         *     would say nothing)
         */
        double[] steps(SecondArm arm) {
            return runs.get(arm).stream().mapToDouble(r -> {
                double s = reached(r);
                if (s == 0) {
                    throw new DataError(r.cell() + " is at the target " + target
                            + " at step 0, before training: steps to it cannot be compared");
                }
                return Double.isNaN(s) ? stage.steps() : s;
            }).toArray();
        }

        /** How many of an arm's confirmation runs never reach the target or diverged. */
        int censored(SecondArm arm) {
            return (int) runs.get(arm).stream().filter(r -> Double.isNaN(reached(r))).count();
        }

        /** How many of an arm's confirmation runs diverged. */
        int diverged(SecondArm arm) {
            return (int) runs.get(arm).stream().filter(SecondResult::diverged).count();
        }

        /** A run's steps to the target; NaN if it never reaches it or diverged (the protocol counts both alike). */
        private double reached(SecondResult r) {
            return r.diverged() ? Double.NaN : r.stepsTo(target);
        }

        /** An arm's final validation losses, in seed order; NaN for a diverged run. */
        double[] finals(SecondArm arm) {
            return runs.get(arm).stream().mapToDouble(SecondResult::finalValLoss).toArray();
        }

        /** Whether both arms' runs and the target are there. */
        boolean ready(SecondArm x, SecondArm y) {
            return Double.isFinite(target) && runs.containsKey(x) && runs.containsKey(y);
        }
    }

    /**
     * A comparison's outcome, paired by seed.
     *
     * @param planned    what was compared
     * @param ready      whether its runs are all there; every other field is NaN or null when not
     * @param ratio      {@code exp(mean d)}: X's steps over Y's, a geometric mean over the seeds
     * @param low        the ratio's 95 % interval, low end
     * @param high       its high end
     * @param p          the paired t-test's two-sided p-value
     * @param holm       p after Holm's correction within the family
     * @param censoredX  X's runs that never reach the target
     * @param censoredY  Y's runs that never reach the target
     * @param lowerX     on how many seeds X needs fewer steps
     * @param finalLoss  X's final loss less Y's, paired; null when a run diverged
     * @param finalHolm  its p-value after Holm's correction within the family
     */
    record Comparison(Planned planned, boolean ready, double ratio, double low, double high, double p, double holm,
                      int censoredX, int censoredY, int lowerX, StudyStats.Paired finalLoss, double finalHolm) {
        /**
         * Whether every run of both arms is censored: then every pair is the budget against the budget, the ratio
         * 1 says nothing, and the comparison reads "not reached" rather than a verdict.
         */
        boolean neverReached() {
            int n = SecondPlan.CONFIRMATION_SEEDS.size();
            return ready && censoredX == n && censoredY == n;
        }

        /** The protocol's verdict on the Holm-adjusted p-value and the ratio's side of 1. */
        StudyStats.Verdict verdict() {
            if (!ready || !(holm < ALPHA)) {
                return StudyStats.Verdict.NO_DIFFERENCE;
            }
            return ratio < 1 ? StudyStats.Verdict.FASTER : StudyStats.Verdict.SLOWER;
        }

        /** Whether the ratio's 95 % interval lies inside [0.9, 1/0.9] (never when neither arm reaches the target). */
        boolean equivalent() {
            return ready && !neverReached() && low >= EQUIVALENCE && high <= 1 / EQUIVALENCE;
        }
    }

    /**
     * The drift of {@code muon} against {@code adamw} across GCIDE's budgets: the least-squares line of
     * {@code d = ln(steps_muon / steps_adamw)} on {@code log2(budget steps)} over every confirmation pair.
     *
     * @param pairs   the pairs (24 when every budget is there)
     * @param budgets the budgets whose pairs are in (3 when every budget is there)
     * @param slope the slope, per doubling of the budget
     * @param low   its 95 % interval, low end
     * @param high  its high end
     * @param p     the two-sided t-test of slope 0, {@code pairs − 2} degrees of freedom
     * @param first the mean d at the first budget (which side of 1 the ratio starts on)
     */
    record Drift(int pairs, int budgets, double slope, double low, double high, double p, double first) {
        /** "drifts toward 1", "drifts away from 1" or "no drift shown", by the protocol's rule. */
        String verdict() {
            if (!(p < ALPHA)) {
                return "no drift shown";
            }
            // Toward 1 means the slope has the opposite sign to the first budget's log-ratio; from a first ratio of
            // exactly 1 (first = 0) any slope moves it away.
            return Math.signum(slope) == -Math.signum(first) ? "drifts toward 1" : "drifts away from 1";
        }
    }

    /**
     * Every stage's confirmation runs from the results.
     *
     * @param results the results file's runs
     * @return the stages, in {@link SecondPlan#STAGES}' order
     */
    static List<StageRuns> stages(List<SecondResult> results) {
        // What the sweep reads (SecondCsv.Contents): a cell written twice counts once, its first row.
        Map<String, SecondResult> byKey = ResultsFile.firstByKey(results, r -> r.cell().key(), r -> r);
        Map<String, Double> finals = ResultsFile.firstByKey(results, r -> r.cell().key(),
                SecondResult::finalValLoss);
        List<StageRuns> out = new ArrayList<>();
        for (SecondPlan.Stage s : SecondPlan.STAGES) {
            SecondPlan.Progress progress = SecondPlan.progress(s, finals);
            Map<SecondArm, SecondCell> tuned = progress.tuned();
            Map<SecondArm, List<SecondResult>> runs = new EnumMap<>(SecondArm.class);
            tuned.forEach((arm, config) -> {
                List<SecondResult> seeds = new ArrayList<>();
                for (long seed : SecondPlan.CONFIRMATION_SEEDS) {
                    SecondResult r = byKey.get(config.withSeed(seed).key());
                    if (r == null) {
                        return;
                    }
                    seeds.add(r);
                }
                runs.put(arm, seeds);
            });
            double target = runs.containsKey(SecondArm.ADAMW) ? runs.get(SecondArm.ADAMW).stream()
                    .filter(r -> !r.diverged()).mapToDouble(SecondResult::finalValLoss).max().orElse(Double.NaN)
                    : Double.NaN;
            out.add(new StageRuns(s, tuned, progress.atEdge(), runs, target));
        }
        return out;
    }

    /**
     * A family's comparisons with Holm's correction over its planned size.
     *
     * @param family the family
     * @param stages the stages' runs
     * @return the comparisons, in the family's planned order
     */
    static List<Comparison> compare(Family family, List<StageRuns> stages) {
        return compare(family, stages, null);
    }

    /**
     * A family's comparisons on seconds to the target, {@code steps × τ} with τ an arm's time per step from the
     * timing pass: {@code d + ln(τ_X / τ_Y)}, with Holm's correction over the family; the time per step's own
     * uncertainty is not carried (the step costs are reported beside).
     *
     * @param family    the family
     * @param stages    the stages' runs
     * @param msPerStep each arm's mean ms per step at one thread count, or null for steps
     * @return the comparisons, in the family's planned order; an arm without a time is pending
     */
    static List<Comparison> compare(Family family, List<StageRuns> stages, Map<SecondArm, Double> msPerStep) {
        List<Planned> planned = family.planned();
        double[] p = new double[planned.size()];
        double[] finalP = new double[planned.size()];
        List<StudyStats.Paired> tests = new ArrayList<>();
        List<StudyStats.Paired> finalTests = new ArrayList<>();
        for (int i = 0; i < planned.size(); i++) {
            Planned c = planned.get(i);
            StageRuns s = stage(stages, c.stage());
            StudyStats.Paired t = null;
            StudyStats.Paired f = null;
            boolean timed = msPerStep == null || msPerStep.containsKey(c.x()) && msPerStep.containsKey(c.y());
            if (s.ready(c.x(), c.y()) && timed) {
                t = StudyStats.paired(log(s.steps(c.x()), msPerStep, c.x()), log(s.steps(c.y()), msPerStep, c.y()));
                double[] fx = s.finals(c.x());
                double[] fy = s.finals(c.y());
                if (StudyStats.allFinite(fx) && StudyStats.allFinite(fy)) {
                    f = StudyStats.paired(fx, fy);
                }
            }
            tests.add(t);
            finalTests.add(f);
            p[i] = t == null ? 1 : t.p();
            finalP[i] = f == null ? 1 : f.p();
        }
        double[] holm = holm(p);
        double[] finalHolm = holm(finalP);
        List<Comparison> out = new ArrayList<>();
        for (int i = 0; i < planned.size(); i++) {
            Planned c = planned.get(i);
            StudyStats.Paired t = tests.get(i);
            if (t == null) {
                out.add(new Comparison(c, false, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN, 0, 0, 0,
                        null, Double.NaN));
                continue;
            }
            StageRuns s = stage(stages, c.stage());
            StudyStats.Interval d = t.difference();
            out.add(new Comparison(c, true, Math.exp(d.mean()), Math.exp(d.low()), Math.exp(d.high()), t.p(),
                    holm[i], s.censored(c.x()), s.censored(c.y()), t.lower(), finalTests.get(i),
                    finalTests.get(i) == null ? Double.NaN : finalHolm[i]));
        }
        return out;
    }

    /**
     * Holm's step-down correction: sorted ascending, the k-th smallest p (from 0) is multiplied by {@code m − k},
     * made non-decreasing along the order, and capped at 1.
     *
     * @param p the family's p-values
     * @return the adjusted p-values, in the input's order
     */
    static double[] holm(double[] p) {
        int m = p.length;
        Integer[] order = new Integer[m];
        for (int i = 0; i < m; i++) {
            order[i] = i;
        }
        Arrays.sort(order, Comparator.comparingDouble(i -> p[i]));
        double[] out = new double[m];
        double running = 0;
        for (int k = 0; k < m; k++) {
            running = Math.max(running, Math.min(1, (m - k) * p[order[k]]));
            out[order[k]] = running;
        }
        return out;
    }

    /**
     * The drift of {@code muon} against {@code adamw} over the GCIDE stages whose runs are all there.
     *
     * @param stages the stages' runs
     * @return the drift, or null until {@code B1} and at least one longer budget are ready ({@code B1} says which
     *     side of 1 the ratio starts on)
     */
    static Drift drift(List<StageRuns> stages) {
        List<double[]> points = new ArrayList<>();
        double first = Double.NaN;
        int budgets = 0;
        for (StageRuns s : stages) {
            if (!s.stage().corpus().equals("gcide") || !s.ready(SecondArm.MUON, SecondArm.ADAMW)) {
                continue;
            }
            budgets++;
            double[] muon = s.steps(SecondArm.MUON);
            double[] adamw = s.steps(SecondArm.ADAMW);
            double x = Math.log(s.stage().steps()) / Math.log(2);
            double sum = 0;
            for (int i = 0; i < muon.length; i++) {
                double d = Math.log(muon[i] / adamw[i]);
                points.add(new double[] {x, d});
                sum += d;
            }
            if (s.stage().equals(SecondPlan.STAGES.get(0))) {
                first = sum / muon.length;
            }
        }
        if (budgets < 2 || Double.isNaN(first)) {
            return null;
        }
        return line(points, budgets, first);
    }

    /** The least-squares line of the points' second coordinate on their first, with its slope's t-test. */
    static Drift line(List<double[]> points, int budgets, double first) {
        int n = points.size();
        double mx = points.stream().mapToDouble(q -> q[0]).average().orElseThrow();
        double my = points.stream().mapToDouble(q -> q[1]).average().orElseThrow();
        double sxx = 0;
        double sxy = 0;
        for (double[] q : points) {
            sxx += (q[0] - mx) * (q[0] - mx);
            sxy += (q[0] - mx) * (q[1] - my);
        }
        double slope = sxy / sxx;
        double sse = 0;
        for (double[] q : points) {
            double residual = q[1] - my - slope * (q[0] - mx);
            sse += residual * residual;
        }
        int df = n - 2;
        double se = Math.sqrt(sse / df / sxx);
        double half = StudyStats.tQuantile(1 - ALPHA / 2, df) * se;
        double p = se == 0 ? (slope == 0 ? 1 : 0) : 2 * StudyStats.tCdf(-Math.abs(slope / se), df);
        return new Drift(n, budgets, slope, slope - half, slope + half, p, first);
    }

    /**
     * The report without a timing pass: the targets and tuned configurations, each family's table on steps, the
     * drift and the tuning grids.
     *
     * @param results the results file's runs
     * @return Markdown
     */
    static String markdown(List<SecondResult> results) {
        return markdown(results, List.of());
    }

    /**
     * The report: the targets and tuned configurations, each family's table on steps, the drift, with a timing
     * pass each family on seconds at every thread count and every arm's step cost against {@code MuonAdamW}'s, and
     * last the tuning grids ({@link SecondGrids}).
     *
     * @param results the results file's runs
     * @param timing  the timing pass's rounds (its latest pass), empty if none
     * @return Markdown
     */
    static String markdown(List<SecondResult> results, List<SecondTiming.Round> timing) {
        List<StageRuns> stages = stages(results);
        StringBuilder md = new StringBuilder("# The second study: analysis\n\n");
        md.append(String.format(Locale.ROOT, "%d runs read. Steps to the target, paired by seed over the %d "
                + "confirmation seeds; ratio = exp(mean ln(steps X / steps Y)) with its 95 %% t-interval; Holm's "
                + "correction within each family (a pending comparison counts with p = 1).%n%n", results.size(),
                SecondPlan.CONFIRMATION_SEEDS.size()));
        md.append("| stage | target (AdamW's highest confirmation loss) | tuned configurations |\n| --- | ---: | --- |\n");
        for (StageRuns s : stages) {
            List<String> tuned = new ArrayList<>();
            s.tuned().forEach((arm, c) -> tuned.add(SecondStudy.configuration(c)
                    + (s.atEdge().contains(arm) ? " (lr at the edge of its grid, its extension spent)" : "")
                    + (s.runs().containsKey(arm) ? "" : " (confirmation pending)")));
            md.append("| ").append(s.stage().id()).append(" | ").append(target(s)).append(" | ")
                    .append(tuned.isEmpty() ? "tuning" : String.join("; ", tuned)).append(" |\n");
        }
        for (Family f : Family.values()) {
            table(md, f.title() + ": steps to the target", compare(f, stages), true);
        }
        Drift d = drift(stages);
        md.append("\n## Drift of MuonAdamW against AdamW over GCIDE's budgets\n\n");
        if (d == null) {
            md.append("Pending: needs the confirmation runs of B1 and at least one longer budget.\n");
        } else {
            int all = (int) SecondPlan.STAGES.stream().filter(s -> s.corpus().equals("gcide")).count();
            md.append(String.format(Locale.ROOT, "Slope of ln(steps ratio) per doubling of the budget, over %d "
                    + "pairs: %+.4f (95 %% CI %+.4f to %+.4f), p %s: %s%s.%n", d.pairs(), d.slope(), d.low(),
                    d.high(), p(d.p()), d.verdict(), d.budgets() < all ? String.format(Locale.ROOT,
                            " (partial: %d of %d budgets so far)", d.budgets(), all) : ""));
        }
        if (timing.isEmpty()) {
            md.append("\nSeconds: pending the timing pass.\n");
            return md.append(SecondGrids.markdown(results, stages)).toString();
        }
        int blocks = SecondTiming.finished(timing);
        if (blocks < SecondTiming.blocks()) {
            md.append(String.format(Locale.ROOT, "%nSeconds: pending a whole timing pass; the latest (%s) has %d of "
                    + "its %d blocks.%n", timing.get(0).pass(), blocks, SecondTiming.blocks()));
            return md.append(SecondGrids.markdown(results, stages)).toString();
        }
        md.append('\n').append(timingConditions(timing));
        SecondTiming.times(timing).forEach((threads, times) -> {
            Map<SecondArm, Double> means = new EnumMap<>(SecondArm.class);
            times.forEach((arm, ms) -> means.put(arm, Arrays.stream(ms).average().orElseThrow()));
            for (Family f : Family.values()) {
                table(md, f.title() + ": seconds to the target at " + threads + " thread" + (threads == 1 ? "" : "s"),
                        compare(f, stages, means), false);
            }
            md.append("\n## Step cost at ").append(threads).append(" thread").append(threads == 1 ? "" : "s")
                    .append(", against MuonAdamW\n\n| arm | ms per step (95 % CI over the rounds) "
                            + "| over MuonAdamW's (95 % CI) |\n| --- | ---: | ---: |\n");
            for (SecondTiming.Cost c : SecondTiming.costs(times, threads)) {
                StudyStats.Interval ms = StudyStats.interval(times.get(c.arm()));
                md.append(String.format(Locale.ROOT, "| %s | %.2f (%.2f–%.2f) | %.3f (%.3f–%.3f) |%n",
                        c.arm().label(), c.ms(), ms.mean() - ms.halfWidth(), ms.mean() + ms.halfWidth(), c.ratio(),
                        c.low(), c.high()));
            }
        });
        return md.append(SecondGrids.markdown(results, stages)).toString();
    }

    /** One family's table; the final-loss columns only with steps (they do not depend on the time per step). */
    private static void table(StringBuilder md, String title, List<Comparison> comparisons, boolean finals) {
        md.append("\n## ").append(title).append("\n\n| stage | X against Y | ratio (95 % CI) | p | Holm p "
                + "| verdict | X faster on | censored X, Y |").append(finals ? " final loss X − Y (95 % CI) | Holm p |"
                : "").append("\n| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |")
                .append(finals ? " ---: | ---: |" : "").append('\n');
        for (Comparison c : comparisons) {
            Planned q = c.planned();
            md.append("| ").append(q.stage().id()).append(" | ").append(q.x().label()).append(" against ")
                    .append(q.y().label()).append(" | ");
            if (!c.ready()) {
                md.append("pending | | | | | |").append(finals ? " | |" : "").append('\n');
                continue;
            }
            int n = SecondPlan.CONFIRMATION_SEEDS.size();
            String verdict = c.neverReached() ? String.format(Locale.ROOT, "not reached: %d of %d censored in both "
                    + "arms", n, n) : c.verdict() + (c.equivalent() ? ", equivalent within 10 %" : "");
            md.append(String.format(Locale.ROOT, "%.3f (%.3f–%.3f) | %s | %s | %s | %d of %d | %d, %d |",
                    c.ratio(), c.low(), c.high(), p(c.p()), p(c.holm()), verdict, c.lowerX(), n, c.censoredX(),
                    c.censoredY()));
            if (finals) {
                StudyStats.Paired fl = c.finalLoss();
                md.append(fl == null ? " n/a (a run diverged) | |" : String.format(Locale.ROOT,
                        " %+.4f (%+.4f to %+.4f) | %s |", fl.difference().mean(), fl.difference().low(),
                        fl.difference().high(), p(c.finalHolm())));
            }
            md.append('\n');
        }
    }

    /**
     * Writes {@link #markdown(List, List)} to a file.
     *
     * @param results the results file's runs
     * @param timing  the timing pass's rounds, empty if none
     * @param report  the file
     * @throws DataError naming the file, if it cannot be written
     */
    static void write(List<SecondResult> results, List<SecondTiming.Round> timing, Path report) {
        try {
            Files.writeString(report, markdown(results, timing));
        } catch (IOException e) {
            throw new DataError(report + ": cannot write the analysis ("
                    + DataError.reason(e) + ")", e);
        }
    }

    /**
     * The conditions of a timing pass, as the protocol asks them recorded: the load average over its blocks, and
     * at one thread how close the thread's CPU time came to the wall time (a gap is time the step waited).
     */
    static String timingConditions(List<SecondTiming.Round> timing) {
        DoubleSummaryStatistics load = timing.stream().flatMapToDouble(r -> DoubleStream.of(r.loadStart(),
                r.loadEnd())).filter(Double::isFinite).summaryStatistics();
        List<SecondTiming.Round> one = timing.stream().filter(r -> r.threads() == 1).toList();
        long close = one.stream().filter(r -> Math.abs(r.cpuMs() - r.ms()) <= 0.001 * r.ms()).count();
        double widest = one.stream().mapToDouble(r -> Math.abs(r.cpuMs() - r.ms()) / r.ms()).max().orElse(Double.NaN);
        return String.format(Locale.ROOT, "Timing pass %s: load average %s over its blocks; at one thread the "
                + "thread's CPU time was within 0.1 %% of the wall time in %d of %d blocks (at most %.2f %% apart).%n",
                timing.get(0).pass(), load.getCount() == 0 ? "not recorded" : String.format(Locale.ROOT,
                        "%.2f–%.2f", load.getMin(), load.getMax()), close, one.size(), 100 * widest);
    }

    /** A stage's target for the report: pending, or the loss, with how many AdamW runs it leaves out. */
    private static String target(StageRuns s) {
        if (!s.runs().containsKey(SecondArm.ADAMW)) {
            return "pending";
        }
        int diverged = s.diverged(SecondArm.ADAMW);
        int n = SecondPlan.CONFIRMATION_SEEDS.size();
        if (diverged == n) {
            return "none: every AdamW confirmation run diverged";
        }
        return String.format(Locale.ROOT, "%.4f", s.target()) + (diverged == 0 ? "" : String.format(Locale.ROOT,
                " (the highest of %d; %d AdamW run%s diverged, counted as censored)", n - diverged, diverged,
                diverged == 1 ? "" : "s"));
    }

    private static StageRuns stage(List<StageRuns> stages, SecondPlan.Stage stage) {
        return stages.stream().filter(s -> s.stage().equals(stage)).findFirst().orElseThrow();
    }

    /** ln of each value, plus ln of the arm's time per step when there is one. */
    private static double[] log(double[] steps, Map<SecondArm, Double> msPerStep, SecondArm arm) {
        double shift = msPerStep == null ? 0 : Math.log(msPerStep.get(arm));
        return Arrays.stream(steps).map(v -> Math.log(v) + shift).toArray();
    }

    private static String p(double value) {
        return value < 1e-4 ? String.format(Locale.ROOT, "%.1e", value) : String.format(Locale.ROOT, "%.4f", value);
    }
}
