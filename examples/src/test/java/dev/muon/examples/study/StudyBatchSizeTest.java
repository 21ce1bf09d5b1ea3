package dev.muon.examples.study;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Rule 10 on made-up runs: the ratios, and what the two verdicts allow the study to say. */
class StudyBatchSizeTest {
    private static final StudySetting SMALL = StudyFixtures.SETTING;
    private static final StudySetting LARGE = new StudySetting(SMALL.width(), 4 * SMALL.batch(), SMALL.layers(),
            SMALL.heads(), SMALL.context(), SMALL.steps(), SMALL.evals(), SMALL.weightDecay());
    private static final StudySetting OTHER_WIDTH = new StudySetting(2 * SMALL.width(), SMALL.batch(),
            SMALL.layers(), SMALL.heads(), SMALL.context(), SMALL.steps(), SMALL.evals(), SMALL.weightDecay());

    /**
     * AdamW falling in a straight line to about 2.0 over three seeds; MuonAdamW to about {@code muonLast}: at 2.0
     * the two are the same runs (no difference), at 1.0 Muon reaches the target in about two thirds of the steps.
     */
    private static List<StudyResult> runs(StudySetting s, double muonLast) {
        List<StudyResult> runs = new ArrayList<>();
        for (long seed = 1; seed <= 3; seed++) {
            double jitter = 0.02 * (seed - 2);
            runs.add(StudyFixtures.straight(s.cell(StudyArm.ADAMW, 1e-3, Double.NaN, seed), 2.0 + jitter));
            runs.add(StudyFixtures.straight(s.cell(StudyArm.MUON, 1e-3, 2e-3, seed), muonLast - jitter));
        }
        return runs;
    }

    private static List<StudyAnalysis.SettingAnalysis> analyses(double muonAtSmall, double muonAtLarge) {
        List<StudyResult> runs = new ArrayList<>(runs(SMALL, muonAtSmall));
        runs.addAll(runs(LARGE, muonAtLarge));
        runs.addAll(runs(OTHER_WIDTH, 1.0));
        return StudyAnalysis.analyze(runs, Map.of());
    }

    @Test
    void aModelAtTwoBatchSizes_getsItsRatios_andOneAtASingleBatchSizeIsLeftOut() {
        Map<String, List<StudyBatchSize.Point>> models = StudyBatchSize.points(analyses(2.0, 1.0));
        assertEquals(1, models.size(), models.toString());
        List<StudyBatchSize.Point> points = models.values().iterator().next();
        assertEquals(List.of(SMALL.batch(), LARGE.batch()), points.stream().map(p -> p.setting().batch()).toList());
        assertEquals(1.0, points.get(0).ratio(), 1e-12);
        assertEquals(StudyStats.Verdict.NO_DIFFERENCE, points.get(0).verdict());
        // AdamW: 99.0, 100 and 100 (censored) steps; Muon reaches 2.0 at 100 * 2 / (4 - last) for last 1.02, 1, 0.98.
        double adamw = (100 * 2 / 2.02 + 100 + 100) / 3;
        double muon = (100 * 2 / 2.98 + 100 * 2 / 3.0 + 100 * 2 / 3.02) / 3;
        assertEquals(muon / adamw, points.get(1).ratio(), 1e-9);
        assertEquals(StudyStats.Verdict.FASTER, points.get(1).verdict());
        assertEquals(StudyBatchSize.Reading.LARGER_GAINS_MORE, StudyBatchSize.reading(points));
    }

    @Test
    void theReport_saysMuonGainsMoreAtTheLargerBatch_onlyWhenTheVerdictsDiffer() {
        String differ = StudyAnalysis.markdown(analyses(2.0, 1.0), false);
        assertTrue(differ.contains("## Batch size (rule 10)"), differ);
        assertTrue(differ.contains("| d = 16, 1 layers, context 16, weight decay 0.1 | 16 | 100 |"), differ);
        assertTrue(differ.contains("ratio 1.00 at batch 4 and 0.67 at batch 16; the verdicts differ (no difference "
                + "shown at batch 4, faster at batch 16): Muon gains more at the larger batch."), differ);

        String same = StudyAnalysis.markdown(analyses(1.0, 1.0), false);
        assertTrue(same.contains("the verdicts are the same (faster at both), so the study does not say that Muon "
                + "gains more at either batch size."), same);
        assertTrue(!same.contains("gains more at the larger batch"), same);

        String one = StudyAnalysis.markdown(StudyAnalysis.analyze(runs(SMALL, 1.0), Map.of()), false);
        assertTrue(!one.contains("Batch size"), one);
    }

    @ParameterizedTest(name = "{0} at the smaller batch, {1} at the larger: {2}")
    @CsvSource({
            "FASTER, FASTER, SAME",
            "NO_DIFFERENCE, NO_DIFFERENCE, SAME",
            "SLOWER, SLOWER, SAME",
            "NO_DIFFERENCE, FASTER, LARGER_GAINS_MORE",
            "SLOWER, FASTER, LARGER_GAINS_MORE",
            "SLOWER, NO_DIFFERENCE, LARGER_GAINS_MORE",
            "FASTER, NO_DIFFERENCE, SMALLER_GAINS_MORE",
            "FASTER, SLOWER, SMALLER_GAINS_MORE",
            "NO_DIFFERENCE, SLOWER, SMALLER_GAINS_MORE",
    })
    void reading_comparesTheVerdictsAtTheSmallestAndLargestBatch(StudyStats.Verdict small, StudyStats.Verdict large,
                                                                StudyBatchSize.Reading expected) {
        List<StudyBatchSize.Point> points = List.of(new StudyBatchSize.Point(SMALL, 100, 90, small),
                new StudyBatchSize.Point(LARGE, 100, 50, large));
        assertEquals(expected, StudyBatchSize.reading(points));
    }
}
