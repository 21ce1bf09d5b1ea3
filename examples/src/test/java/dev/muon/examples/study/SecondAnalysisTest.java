package dev.muon.examples.study;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleBiFunction;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The second study's analysis on made-up runs: the plan is run to its end with {@link SecondPlanTest#inside}'s
 * tuning losses, and every confirmation run is a straight line from loss 4 falling by {@code slope} over its budget,
 * so that its steps to any target are known in closed form and the expected ratios are computed here from the
 * slopes, not by the analysis' own code path.
 */
class SecondAnalysisTest {
    private static final StudyMachine MACHINE = new StudyMachine("abc", "test CPU", 2);

    /** A per-seed wobble in [-1, 1], different for each arm. */
    private static double wobble(SecondArm arm, long seed) {
        return Math.sin(seed * 1.7 + arm.ordinal() * 2.3);
    }

    /** A run whose validation loss falls in a straight line from 4 to {@code 4 − slope} over its budget. */
    private static SecondResult straight(SecondCell c, double slope) {
        int[] steps = c.evalSteps();
        double[] loss = new double[steps.length];
        double[] seconds = new double[steps.length];
        for (int k = 0; k < steps.length; k++) {
            loss[k] = 4 - slope * steps[k] / c.steps();
            seconds[k] = 0.1 * steps[k];
        }
        return new SecondResult(c, steps, loss, seconds, false, 1, 1, 1, 0.5, 0.5, MACHINE, "gcide.dict.dz",
                "2026-11-28T12:00:00Z");
    }

    /** The whole protocol's runs: tuning runs end at {@code inside}'s loss, confirmation runs fall by {@code slope}. */
    static List<SecondResult> study(ToDoubleBiFunction<SecondCell, Long> slope) {
        Map<String, Double> finals = new HashMap<>();
        List<SecondResult> out = new ArrayList<>();
        for (int round = 0; round < 100; round++) {
            List<SecondCell> next = SecondPlan.pending(finals);
            if (next.isEmpty()) {
                return out;
            }
            for (SecondCell c : next) {
                SecondResult r = c.seed() > 1000 ? straight(c, slope.applyAsDouble(c, c.seed()))
                        : straight(c, 4 - SecondPlanTest.inside(c));
                finals.put(c.key(), r.finalValLoss());
                out.add(r);
            }
        }
        throw new AssertionError("the plan did not end in 100 rounds");
    }

    /** AdamW falls by about 2, MuonAdamW twice as fast at B1 and less so at longer budgets; variants set below. */
    static double slope(SecondCell c, long seed) {
        double w = 0.05 * wobble(c.arm(), seed);
        double doublings = Math.log(c.steps() / 1000.0) / Math.log(2);
        return switch (c.arm()) {
            case ADAMW, ADAMW_2LR -> 2 * (1 + w);
            case MUON -> 4 * (1 - 0.15 * doublings) * (1 + w);
            case NORMUON -> 0.5;
            case CAUTIOUS_WD -> 4 * (1 + 0.05 * wobble(SecondArm.MUON, seed)) * (1 + 0.002 * wobble(c.arm(), seed));
            default -> 4 * (1 + w);
        };
    }

    @Test
    void holm_multipliesTheSortedPValuesDownTheOrder_keepsThemRising_andCapsAtOne() {
        assertArrayEquals(new double[] {0.03, 0.06, 0.06, 0.02}, SecondAnalysis.holm(new double[] {0.01, 0.04,
            0.03, 0.005}), 1e-15);
        assertArrayEquals(new double[] {1, 1, 0.2}, SecondAnalysis.holm(new double[] {0.6, 1, 0.2 / 3}), 1e-15);
    }

    @Test
    void line_recoversAnExactSlope_andSaysWhichWayTheRatioDrifts() {
        List<double[]> points = new ArrayList<>();
        for (int x = 0; x < 3; x++) {
            for (int i = 0; i < 8; i++) {
                points.add(new double[] {x, 0.25 * x - 1 + (i % 2 == 0 ? 0.01 : -0.01)});
            }
        }
        SecondAnalysis.Drift toward = SecondAnalysis.line(points, 3, -1);
        assertEquals(0.25, toward.slope(), 1e-12);
        assertTrue(toward.low() < 0.25 && toward.high() > 0.25 && toward.p() < 1e-10);
        assertEquals("drifts toward 1", toward.verdict());
        assertEquals("drifts away from 1", SecondAnalysis.line(points, 3, 1).verdict());
        List<double[]> flat = new ArrayList<>();
        for (int x = 0; x < 3; x++) {
            for (int i = 0; i < 8; i++) {
                flat.add(new double[] {x, (i % 2 == 0 ? 0.01 : -0.01) * (x == 1 ? 2 : 1)});
            }
        }
        SecondAnalysis.Drift none = SecondAnalysis.line(flat, 3, -1);
        assertEquals(0, none.slope(), 1e-12);
        assertEquals("no drift shown", none.verdict());
    }

    @Test
    void wholeStudy_targetIsAdamWsWorstConfirmationLoss_andRatiosFollowTheSlopes() {
        List<SecondResult> results = study(SecondAnalysisTest::slope);
        List<SecondAnalysis.StageRuns> stages = SecondAnalysis.stages(results);
        SecondAnalysis.StageRuns b1 = stages.get(0);
        double weakest = SecondPlan.CONFIRMATION_SEEDS.stream().mapToDouble(s -> 4 - 2 * (1 + 0.05 * wobble(
                SecondArm.ADAMW, s))).max().orElseThrow();
        assertEquals(weakest, b1.target(), 1e-6);

        List<SecondAnalysis.Comparison> primary = SecondAnalysis.compare(SecondAnalysis.Family.PRIMARY, stages);
        for (SecondAnalysis.Comparison c : primary) {
            double doublings = Math.log(c.planned().stage().steps() / 1000.0) / Math.log(2);
            // A straight line reaches the target at (4 − target) / slope of the budget: the ratio of two runs'
            // steps is the inverse ratio of their slopes, whatever the target.
            double sum = 0;
            for (long s : SecondPlan.CONFIRMATION_SEEDS) {
                sum += Math.log((2 * (1 + 0.05 * wobble(SecondArm.ADAMW, s)))
                        / (4 * (1 - 0.15 * doublings) * (1 + 0.05 * wobble(SecondArm.MUON, s))));
            }
            assertTrue(c.ready(), c.planned().toString());
            assertEquals(Math.exp(sum / 8), c.ratio(), 1e-4, c.planned().toString());
            assertTrue(c.low() < c.ratio() && c.ratio() < c.high());
            assertEquals(StudyStats.Verdict.FASTER, c.verdict());
            assertEquals(8, c.lowerX());
            assertEquals(0, c.censoredX() + c.censoredY());
            assertTrue(c.holm() >= c.p());
            assertTrue(c.finalLoss().difference().mean() < 0, "MuonAdamW ends lower");
        }

        List<SecondAnalysis.Comparison> variants = SecondAnalysis.compare(SecondAnalysis.Family.VARIANTS, stages);
        assertEquals(SecondArm.VARIANTS.size(), variants.size());
        SecondAnalysis.Comparison normuon = variants.get(SecondArm.VARIANTS.indexOf(SecondArm.NORMUON));
        assertEquals(8, normuon.censoredX(), "falls by 0.5 only: never reaches the target");
        assertEquals(StudyStats.Verdict.SLOWER, normuon.verdict());
        SecondAnalysis.Comparison cautious = variants.get(SecondArm.VARIANTS.indexOf(SecondArm.CAUTIOUS_WD));
        assertEquals(StudyStats.Verdict.NO_DIFFERENCE, cautious.verdict());
        assertTrue(cautious.equivalent(), () -> cautious.low() + " to " + cautious.high());
        assertFalse(normuon.equivalent());

        SecondAnalysis.Drift drift = SecondAnalysis.drift(stages);
        assertEquals(24, drift.pairs());
        assertTrue(drift.slope() > 0, "the ratio rises toward 1 with the budget");
        assertEquals("drifts toward 1", drift.verdict());

        String md = SecondAnalysis.markdown(results);
        assertTrue(md.contains("| gcide-1000 | MuonAdamW against AdamW | "), md);
        assertFalse(md.contains("| pending"), md);
    }

    /** The run as if its training loss stopped being finite after its {@code kept} first evaluations. */
    private static SecondResult diverged(SecondResult r, int kept) {
        double[] loss = r.valLoss().clone();
        java.util.Arrays.fill(loss, kept, loss.length, Double.NaN);
        return new SecondResult(r.cell(), r.evalSteps(), loss, r.trainSeconds(), true, 1, 1, 1, 0.5, 0.5, MACHINE,
                "gcide.dict.dz", "2026-11-28T12:00:00Z");
    }

    private static boolean at(SecondResult r, SecondArm arm, long seed) {
        return r.cell().arm() == arm && r.cell().seed() == seed && r.cell().steps() == 1000
                && r.cell().corpus().equals("gcide");
    }

    @Test
    void divergedConfirmationRuns_countAsCensored_andTheTargetIsTheHighestOfAdamWsOthers() {
        // AdamW's weakest seed diverges; MuonAdamW's seed 1002 diverges late, after it has passed the target.
        List<SecondResult> clean = study(SecondAnalysisTest::slope);
        long weakest = SecondPlan.CONFIRMATION_SEEDS.stream().max(java.util.Comparator.comparingDouble(
                seed -> -slope(new SecondCell(SecondArm.ADAMW, "gcide", 1000, 1e-3, 0.99, 0.1, Double.NaN,
                        Double.NaN, seed), seed))).orElseThrow();
        List<SecondResult> results = clean.stream().map(r -> at(r, SecondArm.ADAMW, weakest) ? diverged(r, 3)
                : at(r, SecondArm.MUON, 1002) ? diverged(r, 24) : r).toList();
        SecondAnalysis.StageRuns b1 = SecondAnalysis.stages(results).get(0);
        double others = SecondPlan.CONFIRMATION_SEEDS.stream().filter(seed -> seed != weakest).mapToDouble(
                seed -> 4 - 2 * (1 + 0.05 * wobble(SecondArm.ADAMW, seed))).max().orElseThrow();
        assertEquals(others, b1.target(), 1e-6);
        assertEquals(1, b1.diverged(SecondArm.ADAMW));

        SecondAnalysis.Comparison primary = SecondAnalysis.compare(SecondAnalysis.Family.PRIMARY,
                SecondAnalysis.stages(results)).get(0);
        assertEquals(1, primary.censoredX(), "MuonAdamW's diverged run counts as the budget");
        assertEquals(1, primary.censoredY(), "so does AdamW's");
        int muonSeed = SecondPlan.CONFIRMATION_SEEDS.indexOf(1002L);
        assertEquals(1000, b1.steps(SecondArm.MUON)[muonSeed], 0);
        assertNull(primary.finalLoss(), "no final loss for a diverged run");
        String md = SecondAnalysis.markdown(results);
        assertTrue(md.contains(String.format(java.util.Locale.ROOT, "| gcide-1000 | %.4f (the highest of 7; 1 AdamW "
                + "run diverged, counted as censored) |", others)), md);
    }

    @Test
    void neitherArmReachingTheTarget_readsNotReached_andIsNeverEquivalent() {
        List<SecondResult> results = study((c, seed) -> c.arm() == SecondArm.MUON && c.steps() == 1000
                || c.arm() == SecondArm.RADIAL_BRAKE ? 0.5 : slope(c, seed));
        List<SecondAnalysis.Comparison> variants = SecondAnalysis.compare(SecondAnalysis.Family.VARIANTS,
                SecondAnalysis.stages(results));
        SecondAnalysis.Comparison brake = variants.get(SecondArm.VARIANTS.indexOf(SecondArm.RADIAL_BRAKE));
        assertTrue(brake.neverReached());
        assertEquals(1, brake.ratio(), 0, "the budget against the budget");
        assertFalse(brake.equivalent());
        assertFalse(variants.get(SecondArm.VARIANTS.indexOf(SecondArm.CAUTIOUS_WD)).neverReached());
        assertTrue(SecondAnalysis.markdown(results).contains("| gcide-1000 | RadialBrake against MuonAdamW | 1.000 "
                + "(1.000–1.000) | 1.0000 | 1.0000 | not reached: 8 of 8 censored in both arms | 0 of 8 | 8, 8 |"));
    }

    @Test
    void aTargetMetBeforeTraining_isRefusedNamingTheRun() {
        // AdamW's loss rises: its highest final loss is above every run's loss at step 0.
        List<SecondResult> results = study((c, seed) -> c.arm() == SecondArm.ADAMW ? -0.1 : slope(c, seed));
        List<SecondAnalysis.StageRuns> stages = SecondAnalysis.stages(results);
        dev.muon.examples.DataError e = org.junit.jupiter.api.Assertions.assertThrows(
                dev.muon.examples.DataError.class, () -> SecondAnalysis.compare(SecondAnalysis.Family.PRIMARY,
                        stages));
        assertTrue(e.getMessage().contains(" at step 0, before training"), e.getMessage());
    }

    @Test
    void finalLoss_isThePairedTestOfTheDifferences_HolmCorrectedOverTheFamily() {
        List<SecondAnalysis.Comparison> primary = SecondAnalysis.compare(SecondAnalysis.Family.PRIMARY,
                SecondAnalysis.stages(study(SecondAnalysisTest::slope)));
        double[] p = new double[primary.size()];
        for (int i = 0; i < primary.size(); i++) {
            // Straight lines end at 4 − slope: MuonAdamW's final less AdamW's, seed by seed, in closed form.
            int steps = primary.get(i).planned().stage().steps();
            double doublings = Math.log(steps / 1000.0) / Math.log(2);
            double[] d = SecondPlan.CONFIRMATION_SEEDS.stream().mapToDouble(seed -> 2 * (1 + 0.05 * wobble(
                    SecondArm.ADAMW, seed)) - 4 * (1 - 0.15 * doublings) * (1 + 0.05 * wobble(SecondArm.MUON,
                    seed))).toArray();
            double mean = java.util.Arrays.stream(d).average().orElseThrow();
            double ss = java.util.Arrays.stream(d).map(v -> (v - mean) * (v - mean)).sum();
            double t = mean / Math.sqrt(ss / 7 / 8);
            p[i] = 2 * StudyStats.tCdf(-Math.abs(t), 7);
            assertEquals(mean, primary.get(i).finalLoss().difference().mean(), 1e-6);
            assertEquals(p[i], primary.get(i).finalLoss().p(), 1e-9 + 1e-4 * p[i]);
        }
        double[] holm = SecondAnalysis.holm(p);
        for (int i = 0; i < primary.size(); i++) {
            assertEquals(holm[i], primary.get(i).finalHolm(), 1e-9 + 1e-4 * holm[i]);
        }
    }

    @Test
    void drift_waitsForB1_andSaysWhenItIsPartial() {
        List<SecondResult> all = study(SecondAnalysisTest::slope);
        List<SecondResult> withoutB3 = all.stream().filter(r -> !(r.cell().steps() == 4200 && r.cell().seed() > 1000))
                .toList();
        SecondAnalysis.Drift partial = SecondAnalysis.drift(SecondAnalysis.stages(withoutB3));
        assertEquals(16, partial.pairs());
        assertEquals(2, partial.budgets());
        assertTrue(SecondAnalysis.markdown(withoutB3).contains(" (partial: 2 of 3 budgets so far)."));
        assertFalse(SecondAnalysis.markdown(all).contains("partial"));

        List<SecondResult> withoutB1 = all.stream().filter(r -> !(r.cell().steps() == 1000
                && r.cell().corpus().equals("gcide") && r.cell().arm() == SecondArm.MUON && r.cell().seed() > 1000))
                .toList();
        assertNull(SecondAnalysis.drift(SecondAnalysis.stages(withoutB1)), "B1 says which side of 1 it starts on");
        assertTrue(SecondAnalysis.markdown(withoutB1).contains("Pending: needs the confirmation runs of B1"));
    }

    @Test
    void partialResults_listPendingComparisons_andCountThemInHolmAsPOne() {
        List<SecondResult> all = study(SecondAnalysisTest::slope);
        // Every run but FOLDOC's: three of the four primary comparisons are ready.
        List<SecondResult> results = all.stream().filter(r -> r.cell().corpus().equals("gcide")).toList();
        List<SecondAnalysis.StageRuns> stages = SecondAnalysis.stages(results);
        List<SecondAnalysis.Comparison> primary = SecondAnalysis.compare(SecondAnalysis.Family.PRIMARY, stages);
        assertFalse(primary.get(3).ready());
        assertTrue(Double.isNaN(stages.get(3).target()));
        double[] p = {primary.get(0).p(), primary.get(1).p(), primary.get(2).p(), 1};
        double[] holm = SecondAnalysis.holm(p);
        for (int i = 0; i < 3; i++) {
            assertEquals(holm[i], primary.get(i).holm(), 0);
        }
        assertTrue(SecondAnalysis.markdown(results).contains("| foldoc-1000 | MuonAdamW against AdamW | pending"));

        List<SecondResult> tuningOnly = all.stream().filter(r -> r.cell().seed() < 1000).toList();
        assertNull(SecondAnalysis.drift(SecondAnalysis.stages(tuningOnly)));
        assertTrue(SecondAnalysis.markdown(tuningOnly).contains("Pending: needs the confirmation runs"));
    }
}
