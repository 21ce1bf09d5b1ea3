package dev.muon.examples.study;

import dev.muon.schedule.LrSchedule;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.ToDoubleFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The second study's protocol as cells: the counts per arm and stage that the protocol's cost table assumes, the
 * seeds, the variants, the schedule's warm-up, the lr-edge extension and the estimate against the stated budget.
 * No training: the final losses are made up, U-curves in log lr with their minimum inside the grids.
 */
class SecondPlanTest {
    /** A loss with its minimum at the middle of every grid: no lr edge, no extension. */
    static double inside(SecondCell c) {
        double centre = switch (c.arm()) {
            case ADAMW -> 2e-3;
            case ADAMW_2LR -> 2 * c.adamwLr();
            case MUON -> 4e-3;
            default -> 4e-3 * (c.arm().lrFactors().get(1));
        };
        double loss = 2 + sq(Math.log(SecondPlan.lrOf(c) / centre));
        if (c.arm() == SecondArm.ADAMW) {
            loss += (c.beta2() == 0.99 ? 0 : 0.1) + (c.weightDecay() == 0.1 ? 0 : 0.1);
        }
        if (c.arm() == SecondArm.MUON) {
            loss += sq(Math.log(c.adamwLr() / 2e-3));
        }
        if (c.arm() == SecondArm.HYPERBALL) {
            loss += c.radius() == 8 ? 0 : 0.1;
        }
        return loss;
    }

    private static double sq(double x) {
        return x * x;
    }

    /** Runs the plan to its end with the given losses; returns every cell run, in order. */
    private static List<SecondCell> runAll(ToDoubleFunction<SecondCell> loss) {
        Map<String, Double> finals = new HashMap<>();
        List<SecondCell> ran = new java.util.ArrayList<>();
        for (int round = 0; round < 100; round++) {
            List<SecondCell> next = SecondPlan.pending(finals);
            if (next.isEmpty()) {
                return ran;
            }
            for (SecondCell c : next) {
                assertFalse(finals.containsKey(c.key()), () -> "asked twice: " + c);
                finals.put(c.key(), loss.applyAsDouble(c));
                ran.add(c);
            }
        }
        throw new AssertionError("the plan did not end in 100 rounds");
    }

    private static long count(List<SecondCell> cells, SecondPlan.Stage stage, SecondArm arm, boolean confirmation) {
        return cells.stream().filter(c -> c.corpus().equals(stage.corpus()) && c.steps() == stage.steps()
                && c.arm() == arm && (c.seed() > 1000) == confirmation).count();
    }

    @Test
    void plan_withBestsInside_runsTheProtocolsCellsPerArmAndStage() {
        List<SecondCell> ran = runAll(SecondPlanTest::inside);
        SecondPlan.Stage first = SecondPlan.STAGES.get(0);
        assertEquals(90, count(ran, first, SecondArm.ADAMW, false));
        assertEquals(15, count(ran, first, SecondArm.ADAMW_2LR, false));
        assertEquals(45, count(ran, first, SecondArm.MUON, false));
        assertEquals(27, count(ran, first, SecondArm.HYPERBALL, false));
        for (SecondArm v : SecondArm.VARIANTS) {
            if (v != SecondArm.HYPERBALL) {
                assertEquals(9, count(ran, first, v, false), v::id);
            }
        }
        for (SecondArm arm : SecondArm.values()) {
            assertEquals(8, count(ran, first, arm, true), arm::id);
        }
        for (SecondPlan.Stage s : SecondPlan.STAGES.subList(1, SecondPlan.STAGES.size())) {
            for (SecondArm arm : List.of(SecondArm.ADAMW, SecondArm.ADAMW_2LR, SecondArm.MUON)) {
                assertEquals(15, count(ran, s, arm, false), () -> s.id() + " " + arm.id());
                assertEquals(8, count(ran, s, arm, true), () -> s.id() + " " + arm.id());
            }
            assertTrue(ran.stream().noneMatch(c -> c.corpus().equals(s.corpus()) && c.steps() == s.steps()
                    && c.arm().variant()), s::id);
        }
        assertEquals(569, ran.size());
    }

    @Test
    void plan_laterStages_keepTheFirstStagesBeta2WeightDecayAndAdamWSideFactor() {
        List<SecondCell> ran = runAll(SecondPlanTest::inside);
        for (SecondCell c : ran) {
            if (!(c.corpus().equals("gcide") && c.steps() == 1000)) {
                assertEquals(0.99, c.beta2(), c::toString);
                assertEquals(0.1, c.weightDecay(), c::toString);
                if (c.arm() == SecondArm.MUON) {
                    assertEquals(2e-3, c.adamwLr(), 1e-15, c::toString);
                }
            }
        }
    }

    @Test
    void plan_estimate_isThe32Point6CpuHoursOfTheProtocolAndFitsTheStatedBudget() {
        double seconds = runAll(SecondPlanTest::inside).stream().mapToDouble(SecondPlan::cpuSeconds).sum()
                + SecondPlan.TIMING_CPU_S;
        assertEquals(117_295.2, seconds, 0.5);
        assertTrue(seconds / 3600 <= SecondPlan.BUDGET_CPU_HOURS, () -> seconds / 3600 + " CPU-hours");
    }

    @Test
    void seeds_confirmationAreEightAndDisjointFromTuning() {
        assertEquals(8, SecondPlan.CONFIRMATION_SEEDS.size());
        assertEquals(8, new HashSet<>(SecondPlan.CONFIRMATION_SEEDS).size());
        Set<Long> tuning = new HashSet<>(SecondPlan.TUNING_SEEDS);
        assertTrue(SecondPlan.CONFIRMATION_SEEDS.stream().noneMatch(tuning::contains));
        // Nor any seed of the first study (1 to 5).
        assertTrue(SecondPlan.CONFIRMATION_SEEDS.stream().noneMatch(s -> s >= 1 && s <= 5));
        List<SecondCell> ran = runAll(SecondPlanTest::inside);
        Map<String, Set<Long>> seedsByConfig = new HashMap<>();
        for (SecondCell c : ran) {
            seedsByConfig.computeIfAbsent(c.withSeed(0).key(), k -> new HashSet<>()).add(c.seed());
        }
        seedsByConfig.forEach((config, seeds) -> assertTrue(seeds.equals(new HashSet<>(SecondPlan.TUNING_SEEDS))
                || seeds.equals(new HashSet<>(SecondPlan.CONFIRMATION_SEEDS))
                || seeds.size() == 11, config + " ran at " + seeds));
    }

    @Test
    void variants_areTheTenThatLanded_andEachIsConfirmed() {
        assertEquals(List.of(SecondArm.NORMUON, SecondArm.CAUTIOUS_WD, SecondArm.BF16_MOMENTUM, SecondArm.HYPERBALL,
                SecondArm.MUOWN, SecondArm.RADIAL_BRAKE, SecondArm.RELATIVE_UPDATE, SecondArm.UPDATE_FLOOR,
                SecondArm.AOL, SecondArm.EMA_NESTEROV), SecondArm.VARIANTS);
        Map<SecondArm, Long> confirmed = new EnumMap<>(SecondArm.class);
        for (SecondCell c : runAll(SecondPlanTest::inside)) {
            if (c.seed() > 1000) {
                confirmed.merge(c.arm(), 1L, Long::sum);
            }
        }
        for (SecondArm v : SecondArm.VARIANTS) {
            assertEquals(8L, confirmed.get(v), v::id);
        }
    }

    @Test
    void variants_eachBuildsItsMuonSide() {
        for (SecondArm v : SecondArm.VARIANTS) {
            assertTrue(v.muonConfig(4e-3, 0.1, 8).lr() > 0, v::id);
        }
        assertFalse(SecondArm.MUOWN.muonConfig(4e-3, 0.1, Double.NaN).nesterov());
        assertEquals(0, SecondArm.HYPERBALL.muonConfig(4e-3, 0.1, 8).weightDecay());
        assertThrows(IllegalStateException.class, () -> SecondArm.ADAMW_2LR.muonConfig(1e-3, 0, 0));
    }

    @ParameterizedTest
    @ValueSource(ints = {1000, 2000, 4200})
    void schedule_warmsUpFor5PercentOfTheBudgetThenDecaysToATenth(int steps) {
        SecondCell c = new SecondCell(SecondArm.MUON, "gcide", steps, 2e-3, 0.99, 0.1, 4e-3, Double.NaN, 1);
        assertEquals(0.05 * steps, c.warmupSteps());
        LrSchedule s = c.schedule();
        long w = c.warmupSteps();
        assertEquals(1.0 / w, s.factor(0), 1e-12);
        assertTrue(s.factor(w - 2) < 1);
        assertEquals(1.0, s.factor(w - 1), 1e-12);
        assertEquals(0.1, s.factor(steps), 1e-12);
        assertTrue(s.factor(steps - 1) < 0.1 + 1e-4);
    }

    @Test
    void budgets_reachTwentyCharactersPerParameter() {
        long parameters = 429_664;
        int largest = SecondPlan.BUDGETS.get(SecondPlan.BUDGETS.size() - 1);
        double perParameter = (double) largest * SecondPlan.BATCH * SecondPlan.CONTEXT / parameters;
        assertTrue(perParameter >= 20, () -> perParameter + " characters per parameter");
        assertEquals(SecondPlan.BUDGETS, SecondPlan.STAGES.stream().filter(s -> s.corpus().equals("gcide"))
                .map(SecondPlan.Stage::steps).toList());
    }

    @Test
    void adamwGrid_bestAtTheTopEdge_growsOncePastIt() {
        ToDoubleFunction<SecondCell> loss = c -> c.arm() == SecondArm.ADAMW && c.steps() == 1000
                && c.corpus().equals("gcide") ? 2 - 0.01 * Math.log(c.adamwLr()) + (c.beta2() == 0.99 ? 0 : 1)
                + (c.weightDecay() == 0.1 ? 0 : 1) : inside(c);
        List<SecondCell> ran = runAll(loss);
        SecondPlan.Stage first = SecondPlan.STAGES.get(0);
        assertEquals(93, count(ran, first, SecondArm.ADAMW, false));
        assertTrue(ran.stream().anyMatch(c -> c.arm() == SecondArm.ADAMW && c.adamwLr() == 1.6e-2
                && c.beta2() == 0.99 && c.weightDecay() == 0.1));
        assertTrue(ran.stream().noneMatch(c -> c.arm() == SecondArm.ADAMW && c.adamwLr() == 3.2e-2),
                "grows at most once a side");
    }

    /** The final losses of every cell the plan asks for, run to its end with the given losses. */
    private static Map<String, Double> finals(ToDoubleFunction<SecondCell> loss) {
        Map<String, Double> finals = new HashMap<>();
        runAll(loss).forEach(c -> finals.put(c.key(), loss.applyAsDouble(c)));
        return finals;
    }

    private static boolean adamwAtB1(SecondCell c) {
        return c.arm() == SecondArm.ADAMW && c.steps() == 1000 && c.corpus().equals("gcide");
    }

    @Test
    void aBestLrStillAtAnEdge_isReportedAsSuch_atEitherEdge() {
        SecondPlan.Stage first = SecondPlan.STAGES.get(0);
        assertEquals(Set.of(), SecondPlan.progress(first, finals(SecondPlanTest::inside)).atEdge());

        // Better with every larger lr: one point past the top (1.6e-2), and the best still there.
        ToDoubleFunction<SecondCell> rising = c -> adamwAtB1(c) ? 2 - 0.1 * Math.log(c.adamwLr())
                + (c.beta2() == 0.99 ? 0 : 1) + (c.weightDecay() == 0.1 ? 0 : 1) : inside(c);
        SecondPlan.Progress top = SecondPlan.progress(first, finals(rising));
        assertEquals(1.6e-2, top.tuned().get(SecondArm.ADAMW).adamwLr(), 1e-15);
        assertEquals(Set.of(SecondArm.ADAMW), top.atEdge());

        // Better with every smaller lr: one point past the bottom (2.5e-4), and the best still there.
        ToDoubleFunction<SecondCell> falling = c -> adamwAtB1(c) ? 2 + 0.1 * Math.log(c.adamwLr())
                + (c.beta2() == 0.99 ? 0 : 1) + (c.weightDecay() == 0.1 ? 0 : 1) : inside(c);
        SecondPlan.Progress bottom = SecondPlan.progress(first, finals(falling));
        assertEquals(2.5e-4, bottom.tuned().get(SecondArm.ADAMW).adamwLr(), 1e-15);
        assertEquals(Set.of(SecondArm.ADAMW), bottom.atEdge());
        assertEquals(93, count(runAll(falling), first, SecondArm.ADAMW, false), "grows at most once a side");
    }

    @Test
    void aTie_goesToTheSmallerLr_evenAcrossTheOtherSettings() {
        // Two configurations tie: (beta2 0.95, no decay, lr 4e-3), met first, and (0.99, 0.1, lr 2e-3).
        SecondPlan.Stage first = SecondPlan.STAGES.get(0);
        Map<String, Double> finals = finals(c -> !adamwAtB1(c) ? inside(c)
                : c.beta2() == 0.95 && c.weightDecay() == 0 && c.adamwLr() == 4e-3
                || c.beta2() == 0.99 && c.weightDecay() == 0.1 && c.adamwLr() == 2e-3 ? 1.5 : 3);
        SecondCell best = SecondPlan.progress(first, finals).tuned().get(SecondArm.ADAMW);
        assertEquals(2e-3, best.adamwLr(), 0);
        assertEquals(0.99, best.beta2(), 0);
    }

    @Test
    void aDivergedTuningRun_makesItsConfigurationWorseThanAnyOther() {
        // The configuration with the lowest losses diverges at one tuning seed: the next best wins.
        SecondPlan.Stage first = SecondPlan.STAGES.get(0);
        Map<String, Double> finals = finals(c -> !adamwAtB1(c) ? inside(c)
                : c.beta2() == 0.99 && c.weightDecay() == 0.1 && c.adamwLr() == 2e-3 ? (c.seed() == 2 ? Double.NaN
                : 1) : c.beta2() == 0.99 && c.weightDecay() == 0.1 && c.adamwLr() == 1e-3 ? 2.5 : 3);
        SecondCell best = SecondPlan.progress(first, finals).tuned().get(SecondArm.ADAMW);
        assertEquals(1e-3, best.adamwLr(), 0);
    }

    @Test
    void laterStages_waitForTheFirstStagesTuning() {
        Map<String, Double> finals = new HashMap<>();
        assertTrue(SecondPlan.pending(finals).stream().allMatch(c -> c.steps() == 1000
                && c.corpus().equals("gcide") && c.arm() == SecondArm.ADAMW));
        assertEquals(90, SecondPlan.pending(finals).size());
    }

    @Test
    void cell_badValues_areRejected() {
        assertThrows(IllegalArgumentException.class, () -> new SecondCell(SecondArm.ADAMW, "gcide", 1000, 1e-3,
                0.99, 0.1, 1e-3, Double.NaN, 1));
        assertThrows(IllegalArgumentException.class, () -> new SecondCell(SecondArm.HYPERBALL, "gcide", 1000, 1e-3,
                0.99, 0.1, 1e-3, Double.NaN, 1));
        assertThrows(IllegalArgumentException.class, () -> new SecondCell(SecondArm.MUON, "fortunes", 1000, 1e-3,
                0.99, 0.1, 1e-3, Double.NaN, 1));
        assertThrows(IllegalArgumentException.class, () -> new SecondCell(SecondArm.MUON, "gcide", 1000, 1e-3,
                1.0, 0.1, 1e-3, Double.NaN, 1));
    }
}
