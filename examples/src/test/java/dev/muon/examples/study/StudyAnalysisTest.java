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
        // At the target from the first evaluation on: step 0, whatever the next evaluation holds.
        assertEquals(0.0, r.stepsTo(4.0), 0);
        assertEquals(0.0, r.stepsTo(5.0), 0);
        StudyResult rising = StudyFixtures.result(S.cell(StudyArm.ADAMW, 1e-3, Double.NaN, 2), 4.0, 4.5, 3.0, 2.0,
                1.5);
        assertEquals(0.0, rising.stepsTo(4.2), 0);
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

    /** A timing pass of {@link #runs()}'s setting: AdamW's step about 10 ms over three rounds, Muon's about 30. */
    private static Map<String, Map<StudyArm, StudyTiming.StepTime>> muonThreeTimesSlower() {
        return Map.of(StudyTiming.key(S), Map.of(
                StudyArm.ADAMW, new StudyTiming.StepTime(StudyArm.ADAMW, new double[] {10, 10.2, 9.8}),
                StudyArm.MUON, new StudyTiming.StepTime(StudyArm.MUON, new double[] {30, 30.3, 29.7})));
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
        StudyAnalysis.SettingAnalysis a = StudyAnalysis.analyze(runs(), muonThreeTimesSlower()).get(0);
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

    /** A run at {@code seed} that reaches the loss 2.0 exactly at evaluation {@code k} (step 25·k) and ends at {@code last}. */
    private static StudyResult reaching(StudyArm arm, long seed, int k, double last) {
        double[] loss = {4, 3, 2.5, 2.2, last};
        loss[k] = 2.0;
        for (int j = k + 1; j < 4; j++) {
            loss[j] = 2.0 - 0.01 * (j - k);
        }
        return StudyFixtures.result(S.cell(arm, 2e-3, arm.muon() ? 4e-3 : Double.NaN, seed), loss);
    }

    @Test
    void secondsTest_isWelchsOnTheSeconds_notOnTheSteps() {
        // AdamW reaches 2.0 at steps 75 and 100 at 10 ms a step: 0.75 and 1.0 s. Muon at 25 and 50 at 20 ms: 0.5
        // and 1.0 s. SciPy's ttest_ind(equal_var=False): p 0.10557 on the steps, 0.71172 on the seconds.
        StudyAnalysis.Config adamw = new StudyAnalysis.Config(StudyArm.ADAMW, 2e-3, Double.NaN,
                List.of(reaching(StudyArm.ADAMW, 1, 3, 1.9), reaching(StudyArm.ADAMW, 2, 4, 2.0)));
        StudyAnalysis.Config muon = new StudyAnalysis.Config(StudyArm.MUON, 2e-3, 4e-3,
                List.of(reaching(StudyArm.MUON, 1, 1, 1.8), reaching(StudyArm.MUON, 2, 2, 1.8)));
        StudyAnalysis.Row base = StudyAnalysis.row(adamw, null, 2.0, 100,
                new StudyTiming.StepTime(StudyArm.ADAMW, new double[] {10, 10}));
        StudyAnalysis.Row row = StudyAnalysis.row(muon, base, 2.0, 100,
                new StudyTiming.StepTime(StudyArm.MUON, new double[] {20, 20}));
        assertNull(base.secondsTest());
        assertEquals(0.10557280900008414, row.stepsTest().p(), 1e-12);
        assertEquals(0.7117227912336697, row.secondsTest().p(), 1e-12);
        assertEquals(-0.4472135954999579, row.secondsTest().t(), 1e-12);
    }

    @Test
    void paired_matchesEachVariantRunWithMuonsOfTheSameSeed() {
        // Muon reaches 2.0 at steps 50, 75, 50 (seeds 1, 2, 3); the variant, listed in another seed order, at 25, 50,
        // 50: differences −25, −25, 0, so t = −2 with 2 df and p = 1 − 2/√6 (SciPy's ttest_rel: 0.18350).
        StudyAnalysis.Config muon = new StudyAnalysis.Config(StudyArm.MUON, 2e-3, 4e-3, List.of(
                reaching(StudyArm.MUON, 1, 2, 1.90), reaching(StudyArm.MUON, 2, 3, 1.95),
                reaching(StudyArm.MUON, 3, 2, 1.90)));
        StudyAnalysis.Config variant = new StudyAnalysis.Config(StudyArm.NORMUON, 2e-3, 4e-3, List.of(
                reaching(StudyArm.NORMUON, 3, 2, 1.91), reaching(StudyArm.NORMUON, 1, 1, 1.85),
                reaching(StudyArm.NORMUON, 2, 2, 1.90)));
        StudyAnalysis.Row m = StudyAnalysis.row(muon, null, 2.0, 100, null);
        StudyAnalysis.Row v = StudyAnalysis.row(variant, m, 2.0, 100, null);
        StudyAnalysis.PairedRow p = StudyAnalysis.paired(v, m, 2.0);
        assertEquals(3, p.seeds());
        assertEquals(0, p.censored());
        assertEquals(-50.0 / 3, p.steps().difference().mean(), 1e-9);
        assertEquals(-2.0, p.steps().t(), 1e-9);
        assertEquals(1 - 2 / Math.sqrt(6), p.steps().p(), 1e-9);
        assertEquals(2, p.steps().lower());
        // Final losses, variant less Muon by seed: −0.05, −0.05, +0.01.
        assertEquals(-0.03, p.finals().difference().mean(), 1e-12);
        assertEquals(2, p.finals().lower());
    }

    @Test
    void report_saysWhatCensoringDoes_andThatAFullyCensoredVariantDidNotReachTheTarget() {
        StudyAnalysis.SettingAnalysis a = StudyAnalysis.analyze(runs(), muonThreeTimesSlower()).get(0);
        StudyAnalysis.Row adamw = a.rows().get(0);
        StudyAnalysis.Row norMuon = a.rows().get(2);
        assertTrue(norMuon.neverReached());
        assertTrue(!adamw.neverReached());
        assertEquals("not reached, 3 of 3 censored", norMuon.stepsVerdictText());
        assertTrue(adamw.stepsInterval().high() > 100, adamw.stepsInterval().toString());

        String report = StudyAnalysis.markdown(List.of(a), true);
        assertTrue(report.contains("| 3 | " + String.format(java.util.Locale.ROOT, "%.3g",
                norMuon.stepsTest().p()) + " | not reached, 3 of 3 censored |"), report);
        assertTrue(report.contains(String.format(java.util.Locale.ROOT, "- AdamW: 2 of 3 runs censored at 100 steps "
                + "and counted as 100: its mean (%.0f) is a lower bound of its steps, and its interval's upper end "
                + "(%.0f) passes the run length", adamw.stepsInterval().mean(), adamw.stepsInterval().high())), report);
        assertTrue(report.contains("- NorMuon: not reached, 3 of 3 runs censored at 100 steps"), report);
        // Rule 9: the time per step with its interval over the rounds (10 ± 4.303·0.2/√3), the ratios, the p.
        StudyAnalysis.Row muon = a.rows().get(1);
        assertTrue(report.contains(String.format(java.util.Locale.ROOT, "| AdamW | 3 | 10.0 | 9.5 to 10.5 | - | - "
                + "| - |%n| MuonAdamW | 3 | 30.0 | 29.3 to 30.7 | %.2f | %.2f | %.3g |", muon.stepsInterval().mean()
                / adamw.stepsInterval().mean(), muon.secondsInterval().mean() / adamw.secondsInterval().mean(),
                muon.secondsTest().p())), report);
        // The paired table: NorMuon's pairs are all censored, so no steps; its final losses are all higher.
        assertEquals(1, a.paired().size());
        assertTrue(report.contains("| NorMuon | 3 | 3 | - | - | - | - | "), report);
        assertEquals(0, a.paired().get(0).finals().lower());
    }

    @Test
    void quietness_givesTheLoadRange_theLargestCpuGap_andTheRoundsWithinTheTolerance() {
        StudyTiming.Quietness q = StudyTiming.quietness(List.of(
                new StudyTiming.Round("k", "p1", StudyArm.ADAMW, 100, 99.95, 0.7, 0.9),
                new StudyTiming.Round("k", "p1", StudyArm.MUON, 200, 199.5, Double.NaN, 0.6),
                new StudyTiming.Round("k", "p1", StudyArm.ADAMW, 100, 100.1, 1.2, 0.8)), 0.001);
        assertEquals(List.of("p1"), q.passes());
        assertEquals(3, q.rounds());
        assertEquals(0.6, q.loadLow());
        assertEquals(1.2, q.loadHigh());
        assertEquals(0.0025, q.maxCpuGap(), 1e-12);
        assertEquals(2, q.within());
        // 0.0025 is written as 0.25 %; a gap of 0.236 % is written as 0.24 %, never rounded down.
        assertTrue(StudyAnalysis.quietness(q).contains("0.60 to 1.20; the thread CPU time per step within 0.25 % "
                + "of the wall time in every round, and within 0.1 % in 2 of 3 rounds."), StudyAnalysis.quietness(q));
        StudyTiming.Quietness q2 = StudyTiming.quietness(List.of(
                new StudyTiming.Round("k", "p1", StudyArm.ADAMW, 100, 99.7638, 1, 1)), 0.001);
        assertTrue(StudyAnalysis.quietness(q2).contains("within 0.24 %"), StudyAnalysis.quietness(q2));
    }

    @Test
    void timingRounds_areTheLatestPassOfEachSetting(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws java.io.IOException {
        java.nio.file.Path csv = dir.resolve(StudyTiming.FILE);
        String tail = ",2,4,64,%d,1,20,1.0,%s,%s,1,%s,%s,test CPU,abc";
        java.nio.file.Files.writeString(csv, String.join(",", StudyTiming.HEADER) + "\n"
                + "2026-01-01T00:00:00Z,adamw,128,32" + String.format(tail, 1, "50.0", "49.9", "3.00", "4.00") + "\n"
                + "2026-01-01T00:00:00Z,adamw,256,32" + String.format(tail, 1, "90.0", "89.9", "0.50", "0.60") + "\n"
                + "2026-01-02T00:00:00Z,adamw,128,32" + String.format(tail, 1, "40.0", "39.9", "0.70", "0.80") + "\n"
                + "2026-01-02T00:00:00Z,muon,128,32" + String.format(tail, 1, "44.0", "43.8", "0.80", "0.90") + "\n");
        List<StudyTiming.Round> rounds = StudyTiming.rounds(csv);
        assertEquals(3, rounds.size());
        assertEquals(List.of(90.0, 40.0, 44.0), rounds.stream().map(StudyTiming.Round::ms).toList());
        StudyTiming.Quietness q = StudyTiming.quietness(rounds, 0.001);
        assertEquals(0.5, q.loadLow());
        assertEquals(0.9, q.loadHigh());
        assertEquals(List.of("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"), q.passes());
        assertEquals(40.0, StudyTiming.read(csv).get(StudyTiming.key(128, 32, 2, 4, 64)).get(StudyArm.ADAMW)
                .interval().mean(), 1e-12);
    }
}
