package dev.muon.examples.study;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The second study's tuning grids as its report shows them: per stage and arm, every configuration run at the
 * tuning seeds, with the mean final validation loss over them that {@link SecondPlan} tunes on, and the tuned one
 * marked. A reader sees how flat or sharp each optimum is, and which edges were extended.
 */
final class SecondGrids {
    /** The grid's axes in reading order: the other settings first, then the swept lr, then the seed. */
    private static final Comparator<SecondCell> ORDER = Comparator.comparingDouble(SecondCell::beta2)
            .thenComparingDouble(SecondCell::weightDecay).thenComparingDouble(SecondCell::radius)
            .thenComparingDouble(SecondCell::adamwLr).thenComparingDouble(SecondCell::lr2)
            .thenComparingLong(SecondCell::seed);

    private SecondGrids() {
    }

    /**
     * The grids' section of the report.
     *
     * @param results the results file's runs
     * @param stages  the stages' tuned configurations ({@link SecondAnalysis#stages})
     * @return Markdown, one table row per configuration
     */
    static String markdown(List<SecondResult> results, List<SecondAnalysis.StageRuns> stages) {
        // What the sweep reads: a cell written twice counts once, its first row.
        Map<String, SecondResult> byKey = ResultsFile.firstByKey(results, r -> r.cell().key(), r -> r);
        StringBuilder md = new StringBuilder(String.format(Locale.ROOT, "%n## Tuning grids: mean final validation "
                + "loss over the tuning seeds %s%n%nA diverged run counts as worse than any loss, as in the plan; "
                + "the tuned configuration of each arm is marked.%n%n| stage | configuration | mean final loss "
                + "| tuned |%n| --- | --- | ---: | --- |%n", SecondPlan.TUNING_SEEDS));
        for (SecondAnalysis.StageRuns s : stages) {
            for (SecondArm arm : SecondArm.values()) {
                Map<SecondCell, List<SecondResult>> grid = new LinkedHashMap<>();
                byKey.values().stream().map(SecondResult::cell)
                        .filter(c -> c.arm() == arm && c.corpus().equals(s.stage().corpus())
                                && c.steps() == s.stage().steps() && SecondPlan.TUNING_SEEDS.contains(c.seed()))
                        .sorted(ORDER).forEach(c -> grid.computeIfAbsent(c.withSeed(0), k -> new ArrayList<>())
                                .add(byKey.get(c.key())));
                grid.forEach((config, runs) -> md.append("| ").append(s.stage().id()).append(" | ")
                        .append(SecondStudy.configuration(config)).append(" | ").append(mean(runs)).append(" | ")
                        .append(config.equals(s.tuned().get(arm)) ? "tuned" : "").append(" |\n"));
            }
        }
        return md.toString();
    }

    /** The mean over the tuning seeds, or what stands in its way. */
    private static String mean(List<SecondResult> runs) {
        long diverged = runs.stream().filter(SecondResult::diverged).count();
        int seeds = SecondPlan.TUNING_SEEDS.size();
        if (diverged > 0) {
            return String.format(Locale.ROOT, "diverged (%d of %d run%s)", diverged, runs.size(),
                    runs.size() == 1 ? "" : "s");
        }
        double mean = runs.stream().mapToDouble(SecondResult::finalValLoss).average().orElseThrow();
        return String.format(Locale.ROOT, "%.4f", mean) + (runs.size() < seeds
                ? String.format(Locale.ROOT, " (%d of %d seeds so far)", runs.size(), seeds) : "");
    }
}
