package dev.muon.examples.study;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tuning grids' section of the second study's report: one row per configuration with the mean over its tuning
 * seeds computed here from the runs, the tuned one marked, a diverged or unfinished configuration said as such.
 */
class SecondGridsTest {
    private static final StudyMachine MACHINE = new StudyMachine("abc", "test CPU", 2);

    /** A run whose loss falls from 4 to {@code last}; NaN at the end if it diverged. */
    private static SecondResult run(SecondCell c, double last, boolean diverged) {
        int[] steps = c.evalSteps();
        double[] loss = new double[steps.length];
        for (int k = 0; k < steps.length; k++) {
            loss[k] = 4 + (last - 4) * steps[k] / c.steps();
        }
        if (diverged) {
            loss[loss.length - 1] = Double.NaN;
        }
        return new SecondResult(c, steps, loss, new double[steps.length], diverged, 1, 1, 1, 0.5, 0.5, MACHINE,
                "gcide.dict.dz", "2026-11-29T12:00:00Z");
    }

    private static SecondCell adamw(double lr, long seed) {
        return new SecondCell(SecondArm.ADAMW, "gcide", 1000, lr, 0.99, 0.1, Double.NaN, Double.NaN, seed);
    }

    private static List<String> rows(String md) {
        return md.lines().filter(l -> l.startsWith("| gcide") || l.startsWith("| foldoc")).toList();
    }

    @Test
    void everyTuningConfigurationOfTheWholeProtocolHasItsMeanAndEachArmOneTunedRow() {
        List<SecondResult> results = SecondAnalysisTest.study((c, seed) -> 2.0);
        List<SecondAnalysis.StageRuns> stages = SecondAnalysis.stages(results);
        List<String> rows = rows(SecondGrids.markdown(results, stages));
        List<SecondResult> tuning = results.stream().filter(r -> SecondPlan.TUNING_SEEDS.contains(r.cell().seed()))
                .toList();
        assertEquals(tuning.size() / SecondPlan.TUNING_SEEDS.size(), rows.size(), "one row per configuration");
        for (SecondResult r : tuning) {
            SecondCell config = r.cell().withSeed(0);
            double mean = tuning.stream().filter(t -> t.cell().withSeed(0).equals(config))
                    .mapToDouble(SecondResult::finalValLoss).average().orElseThrow();
            String stage = config.corpus() + "-" + config.steps();
            String row = "| " + stage + " | " + SecondStudy.configuration(config) + " | "
                    + String.format(Locale.ROOT, "%.4f", mean) + " |";
            assertTrue(rows.stream().anyMatch(l -> l.startsWith(row)), "no row " + row);
        }
        for (SecondAnalysis.StageRuns s : stages) {
            List<String> marked = rows.stream().filter(l -> l.startsWith("| " + s.stage().id() + " |")
                    && l.endsWith("| tuned |")).toList();
            assertEquals(s.tuned().size(), marked.size(), s.stage().id() + ": one tuned row per tuned arm");
            s.tuned().forEach((arm, c) -> assertTrue(marked.stream().anyMatch(l -> l.startsWith("| "
                    + s.stage().id() + " | " + SecondStudy.configuration(c) + " | ")), arm + " at "
                    + s.stage().id() + " is not the row marked tuned"));
        }
    }

    @Test
    void aDivergedOrUnfinishedConfigurationSaysSoAndTheRowsFollowTheLrAxis() {
        List<SecondResult> results = new ArrayList<>();
        results.add(run(adamw(8e-3, 1), 1.9, false));
        results.add(run(adamw(8e-3, 2), 1.8, true));
        results.add(run(adamw(8e-3, 3), 1.7, false));
        results.add(run(adamw(1e-3, 2), 2.2, false));
        results.add(run(adamw(1e-3, 1), 2.1, false));
        results.add(run(adamw(1e-3, 1), 9.9, false));
        List<String> rows = rows(SecondGrids.markdown(results, SecondAnalysis.stages(results)));
        assertEquals(Arrays.asList(
                "| gcide-1000 | adamw: lr 1e-3, beta2 0.99, weight decay 0.1 | 2.1500 (2 of 3 seeds so far) |  |",
                "| gcide-1000 | adamw: lr 8e-3, beta2 0.99, weight decay 0.1 | diverged (1 of 3 runs) |  |"), rows,
                "the lr axis in order, a cell written twice read once (its first row), nothing tuned yet");
    }
}
