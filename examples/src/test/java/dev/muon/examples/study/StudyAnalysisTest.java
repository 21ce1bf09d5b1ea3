package dev.muon.examples.study;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The protocol's analysis on made-up runs: the target, steps to it (interpolated, censored), seconds from the
 * timing pass, and the verdicts.
 */
class StudyAnalysisTest {
    private static final StudySetting S = StudyFixtures.SETTING;

    @Test
    void stepsTo_interpolatesBetweenEvaluations_andIsNaNWhenNeverReached() {
        StudyResult r = StudyFixtures.result(S.cell(StudyArm.ADAMW, 1e-3, Double.NaN, 1), 4.0, 3.0, 2.0, 1.5, 1.4);
        // Steps 0, 25, 50, 75, 100: 2.5 is halfway between step 25 (3.0) and step 50 (2.0).
        assertEquals(37.5, r.stepsTo(2.5), 1e-9);
        assertEquals(50.0, r.stepsTo(2.0), 1e-9);
        assertEquals(100.0, r.stepsTo(1.4), 1e-9);
        assertTrue(Double.isNaN(r.stepsTo(1.3)));
    }

    /** AdamW at three lrs, Muon at two, two seeds each; Muon's best reaches the target at about half the steps. */
    private static List<StudyResult> runs() {
        List<StudyResult> runs = new ArrayList<>();
        for (long seed = 1; seed <= 3; seed++) {
            double jitter = 0.01 * seed;
            runs.add(StudyFixtures.result(S.cell(StudyArm.ADAMW, 1e-3, Double.NaN, seed), 4, 3.5, 3, 2.6, 2.3 + jitter));
            runs.add(StudyFixtures.result(S.cell(StudyArm.ADAMW, 2e-3, Double.NaN, seed), 4, 3.2, 2.8, 2.4,
                    2.0 + jitter));
            runs.add(StudyFixtures.result(S.cell(StudyArm.ADAMW, 4e-3, Double.NaN, seed), 4, 3.1, 2.9, 2.7,
                    2.5 + jitter));
            runs.add(StudyFixtures.result(S.cell(StudyArm.MUON, 2e-3, 4e-3, seed), 4, 2.4, 2.0 - jitter, 1.9, 1.8));
            runs.add(StudyFixtures.result(S.cell(StudyArm.MUON, 2e-3, 8e-3, seed), 4, 3.0, 2.6, 2.3, 2.1));
            // A variant that never gets there: censored at the run's 100 steps.
            runs.add(StudyFixtures.result(S.cell(StudyArm.NORMUON, 2e-3, 4e-3, seed), 4, 3.5, 3.2, 3.0, 2.9 + jitter));
        }
        return runs;
    }

    @Test
    void analyze_findsTheBestLrs_theTarget_andTheVerdicts() {
        StudyAnalysis.SettingAnalysis a = StudyAnalysis.analyze(runs(), Map.of()).get(0);
        assertEquals(2e-3, a.bestAdamwLr());
        assertEquals(4e-3, a.bestMuonLr());
        assertEquals(2.02, a.target(), 1e-12);
        assertEquals(List.of(StudyArm.ADAMW, StudyArm.MUON, StudyArm.NORMUON),
                a.rows().stream().map(r -> r.config().arm()).toList());

        StudyAnalysis.Row adamw = a.rows().get(0);
        assertNull(adamw.stepsVerdict());
        // Seed 1 (final 2.01) reaches 2.02 just before step 100; seeds 2 and 3 never do: censored at 100.
        assertEquals(2, adamw.censored());
        assertEquals(75 + 25 * (2.4 - 2.02) / (2.4 - 2.01), adamw.steps()[0], 1e-9);
        assertEquals(100.0, adamw.steps()[1]);

        StudyAnalysis.Row muon = a.rows().get(1);
        assertEquals(0, muon.censored());
        assertTrue(muon.stepsInterval().mean() < 55, muon.stepsInterval().toString());
        assertEquals(StudyStats.Verdict.FASTER, muon.stepsVerdict());
        assertEquals(StudyStats.Verdict.FASTER, muon.finalVerdict());

        StudyAnalysis.Row norMuon = a.rows().get(2);
        assertEquals(3, norMuon.censored());
        assertEquals(StudyStats.Verdict.SLOWER, norMuon.finalVerdict());
        assertNull(muon.seconds());
    }

    @Test
    void withATimingPass_secondsAreStepsTimesTheTimePerStep_andCanReverseTheVerdict() {
        // Muon's step takes three times AdamW's: fewer steps, but not fewer seconds.
        Map<String, Map<StudyArm, StudyTiming.StepTime>> times = Map.of(StudyTiming.key(S), Map.of(
                StudyArm.ADAMW, new StudyTiming.StepTime(StudyArm.ADAMW, new double[] {10, 10.2, 9.8}),
                StudyArm.MUON, new StudyTiming.StepTime(StudyArm.MUON, new double[] {30, 30.3, 29.7})));
        StudyAnalysis.SettingAnalysis a = StudyAnalysis.analyze(runs(), times).get(0);
        StudyAnalysis.Row adamw = a.rows().get(0);
        StudyAnalysis.Row muon = a.rows().get(1);
        assertEquals(adamw.steps()[1] * 0.010, adamw.seconds()[1], 1e-12);
        assertEquals(muon.steps()[0] * 0.030, muon.seconds()[0], 1e-12);
        assertEquals(StudyStats.Verdict.FASTER, muon.stepsVerdict());
        assertEquals(StudyStats.Verdict.SLOWER, muon.secondsVerdict());
        // NorMuon has no time per step in this pass: no seconds for it.
        assertNull(a.rows().get(2).seconds());

        String report = StudyAnalysis.markdown(List.of(a), true);
        assertTrue(report.contains("Target: 2.0200, AdamW's mean final validation loss at lr 2e-3."), report);
        assertTrue(report.contains("| MuonAdamW | 2e-3 | 4e-3 | 3 |"), report);
        assertTrue(report.contains("| faster | 30.0 |") && report.contains("| slower |"), report);
        String csv = StudyAnalysis.summaryCsv(List.of(a));
        assertEquals(4, csv.lines().count());
        assertTrue(csv.lines().skip(2).findFirst().orElseThrow().startsWith("16,4,100,muon,0.002,0.004,3,2.02000,"),
                csv);
    }
}
