package dev.muon.examples.study;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleUnaryOperator;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The protocol as cells: which runs come next given the finished ones (the sweep's resume logic), the grid
 * extension at an edge, the phases in order, and the refusals of the plan's options. No training: the finished
 * runs are made up.
 */
class StudyPlanTest {
    private static final StudySetting S = StudyFixtures.SETTING;
    private static final List<Double> ADAMW = List.of(1e-3, 2e-3, 4e-3);
    private static final List<Double> MUON = List.of(2e-3, 4e-3, 8e-3);

    private static StudyPlan plan(int maxExtensions) {
        return new StudyPlan(List.of(S), List.of(S), ADAMW, MUON, List.of(1L, 2L), maxExtensions);
    }

    /** Finishes every pending cell, the final loss of each a function of its lr (the Muon lr for Muon arms). */
    private static void finish(StudyPlan plan, Map<String, StudyResult> done, DoubleUnaryOperator finalLoss) {
        for (StudyCell c : plan.pending(done)) {
            double lr = c.arm().muon() ? c.muonLr() : c.adamwLr();
            done.put(c.key(), StudyFixtures.straight(c, finalLoss.applyAsDouble(lr)));
        }
    }

    /** A U-curve in log lr with its minimum at {@code best}. */
    private static DoubleUnaryOperator u(double best) {
        return lr -> 2 + Math.pow(Math.log(lr / best), 2);
    }

    @Test
    void nothingDone_theAdamWGridIsPending_everySeed() {
        List<StudyCell> pending = plan(2).pending(Map.of());
        assertEquals(6, pending.size());
        assertTrue(pending.stream().allMatch(c -> c.arm() == StudyArm.ADAMW), pending::toString);
        assertEquals(List.of(1e-3, 1e-3, 2e-3, 2e-3, 4e-3, 4e-3), pending.stream().map(StudyCell::adamwLr).toList());
        assertEquals(List.of(1L, 2L, 1L, 2L, 1L, 2L), pending.stream().map(StudyCell::seed).toList());
    }

    @Test
    void doneCells_areSkipped_onlyTheMissingSeedsRunAgain() {
        StudyPlan plan = plan(2);
        Map<String, StudyResult> done = new HashMap<>();
        StudyCell first = S.cell(StudyArm.ADAMW, 1e-3, Double.NaN, 1);
        StudyCell third = S.cell(StudyArm.ADAMW, 2e-3, Double.NaN, 1);
        done.put(first.key(), StudyFixtures.straight(first, 2.5));
        done.put(third.key(), StudyFixtures.straight(third, 2.4));
        List<StudyCell> pending = plan.pending(done);
        assertEquals(4, pending.size());
        assertTrue(pending.stream().noneMatch(c -> c.key().equals(first.key()) || c.key().equals(third.key())));
    }

    @Test
    void adamWDone_withAnInteriorBest_theMuonGridRunsAtAdamWsBestLr() {
        StudyPlan plan = plan(2);
        Map<String, StudyResult> done = new HashMap<>();
        finish(plan, done, u(2e-3));
        List<StudyCell> pending = plan.pending(done);
        assertEquals(6, pending.size());
        assertTrue(pending.stream().allMatch(c -> c.arm() == StudyArm.MUON && c.adamwLr() == 2e-3), pending::toString);
        assertEquals(List.of(2e-3, 4e-3, 8e-3), pending.stream().map(StudyCell::muonLr).distinct().toList());
        assertEquals(2e-3, plan.progress(S, done).bestAdamwLr());
    }

    @Test
    void bestAtAnEdge_extendsTheGrid_upToMaxExtensions() {
        StudyPlan plan = plan(2);
        Map<String, StudyResult> done = new HashMap<>();
        // The loss keeps falling with the lr: the top edge is best every time.
        finish(plan, done, lr -> 3 - lr * 100);
        List<StudyCell> next = plan.pending(done);
        assertEquals(List.of(8e-3, 8e-3), next.stream().map(StudyCell::adamwLr).toList());
        finish(plan, done, lr -> 3 - lr * 100);
        assertEquals(List.of(1.6e-2, 1.6e-2), plan.pending(done).stream().map(StudyCell::adamwLr).toList());
        finish(plan, done, lr -> 3 - lr * 100);
        // Two extensions made: the sweep stops there and AdamW's best is the last edge.
        assertEquals(1.6e-2, plan.progress(S, done).bestAdamwLr());
        assertTrue(plan.pending(done).stream().allMatch(c -> c.arm() == StudyArm.MUON));
    }

    @Test
    void bestAtTheLowEdge_extendsDownward() {
        StudyPlan plan = plan(1);
        Map<String, StudyResult> done = new HashMap<>();
        finish(plan, done, u(4e-4));
        assertEquals(List.of(5e-4, 5e-4), plan.pending(done).stream().map(StudyCell::adamwLr).toList());
    }

    @Test
    void aDivergedRun_countsAsWorseThanAnyLoss() {
        StudyPlan plan = plan(0);
        Map<String, StudyResult> done = new HashMap<>();
        for (StudyCell c : plan.pending(done)) {
            boolean top = c.adamwLr() == 4e-3;
            done.put(c.key(), top && c.seed() == 1 ? StudyFixtures.result(c, 4, 3, Double.NaN, Double.NaN, Double.NaN)
                    : StudyFixtures.straight(c, top ? 1.0 : 2.0 + c.adamwLr()));
        }
        // 4e-3 would be best on its finite seed, but one of its seeds diverged.
        assertEquals(1e-3, plan.progress(S, done).bestAdamwLr());
    }

    @Test
    void muonDone_theVariantsRunAtTheBestLrs_hyperballAlsoAtFourTimesTheMuonLr() {
        StudyPlan plan = plan(2);
        Map<String, StudyResult> done = new HashMap<>();
        finish(plan, done, u(2e-3));
        finish(plan, done, u(4e-3));
        List<StudyCell> pending = plan.pending(done);
        assertEquals(10, pending.size(), pending::toString);
        assertTrue(pending.stream().allMatch(c -> c.arm().variant() && c.adamwLr() == 2e-3), pending::toString);
        assertEquals(List.of(4e-3, 1.6e-2), pending.stream().filter(c -> c.arm() == StudyArm.HYPERBALL)
                .map(StudyCell::muonLr).distinct().toList());
        finish(plan, done, lr -> 2);
        assertEquals(List.of(), plan.pending(done));
        assertEquals("done", plan.progress(S, done).phase());
    }

    @Test
    void aSettingWithoutVariants_isDoneAfterItsMuonSweep() {
        StudyPlan plan = new StudyPlan(List.of(S), List.of(), ADAMW, MUON, List.of(1L), 0);
        Map<String, StudyResult> done = new HashMap<>();
        finish(plan, done, u(2e-3));
        finish(plan, done, u(4e-3));
        assertEquals(List.of(), plan.pending(done));
        assertEquals(6, done.size());
    }

    static Stream<Arguments> badPlans() {
        return Stream.of(
                Arguments.of(List.of(1e-3, 3e-3, 4e-3), List.of(1L), "--adamw-lrs must be a log grid"),
                Arguments.of(List.of(2e-3, 1e-3), List.of(1L), "--adamw-lrs must be ascending"),
                Arguments.of(List.of(-1e-3), List.of(1L), "--adamw-lrs must hold finite lrs > 0, got -0.001"),
                Arguments.of(List.of(1e-3), List.of(1L, 1L), "--seeds must be at least one distinct seed"));
    }

    @ParameterizedTest
    @MethodSource("badPlans")
    void badPlan_isRejected_namingTheOption(List<Double> adamwLrs, List<Long> seeds, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new StudyPlan(List.of(S), List.of(), adamwLrs, MUON, seeds, 0));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }

    static Stream<Arguments> badSettings() {
        return Stream.of(
                Arguments.of("128", "--settings takes WIDTHxBATCH settings such as 128x32, got '128'"),
                Arguments.of("128xb", "--settings takes WIDTHxBATCH settings such as 128x32, got '128xb'"),
                Arguments.of("130x32", "--settings 130x32: width and batch must be >= 1 and the width a multiple"),
                Arguments.of("128x100000", "--settings 128x100000: --tokens 2048000 give 0 steps"));
    }

    @ParameterizedTest
    @MethodSource("badSettings")
    void badSetting_isRejected_namingTheOptionAndTheRule(String text, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StudyPlan.setting(text, "--settings", 2, 4, 64, StudyPlan.TOKENS, 25, 0.1));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }

    @Test
    void theProtocolsSettings_haveTheDocumentedLengths() {
        assertEquals(1000, StudyPlan.setting("128x32", "--settings", 2, 4, 64, StudyPlan.TOKENS, 25, 0.1).steps());
        assertEquals(250, StudyPlan.setting("128x128", "--settings", 2, 4, 64, StudyPlan.TOKENS, 25, 0.1).steps());
    }
}
