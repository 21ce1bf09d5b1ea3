package dev.muon;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.stream.Stream;

import static dev.muon.OptimizerKind.ADAMW;
import static dev.muon.OptimizerKind.MUON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * {@link AssignmentRule} on names and shapes alone, without a tensor: the verdicts and reasons that
 * {@link Assignment} shows for libtorch tensors (its own tests pin those) and muon-djl shows for DJL's arrays.
 */
class AssignmentRuleTest {
    private static final Set<String> NONE = Set.of();

    static Stream<Arguments> defaultVerdicts() {
        return Stream.of(
                Arguments.of("layers.0.mlp.fc1.weight", new long[] {8, 4}, MUON, "hidden matrix"),
                Arguments.of("features.0.weight", new long[] {8, 3, 3, 3}, MUON, "hidden matrix"),
                Arguments.of("layers.0.mlp.fc1.bias", new long[] {8}, ADAMW, "fewer than 2 dims"),
                Arguments.of("experts.w1", new long[] {4, 8, 8}, ADAMW,
                        "3-D (force it to Muon with stacked weights allowed)"),
                Arguments.of("x", new long[] {1, 2, 3, 4, 5}, ADAMW, "5-D"),
                Arguments.of("embed.weight", new long[] {10, 4}, ADAMW, "embedding or head ('embed')"),
                Arguments.of("lm_head.weight", new long[] {4, 10}, ADAMW, "embedding or head ('lm_head')"),
                Arguments.of("fc.weight", new long[] {10, 4}, ADAMW, "output head ('fc')"),
                Arguments.of("h.0.mlp.fc_out.weight", new long[] {4, 4}, MUON, "hidden matrix"));
    }

    @ParameterizedTest(name = "{0} -> {2}")
    @MethodSource("defaultVerdicts")
    void defaultRule_givesTheVerdictAndReasonOfAssignment(String name, long[] shape, OptimizerKind kind,
                                                           String reason) {
        AssignmentRule.Verdict v = AssignmentRule.defaultRule(name, shape);
        assertEquals(kind, v.optimizer());
        assertEquals(reason, v.text());
        assertEquals(Assignment.defaultVerdict(name, shape.length).optimizer(), v.optimizer());
    }

    @Test
    void overrides_winInTheirOrder_andLeaveTheRestToTheRule() {
        AssignmentRule.Verdict forced = AssignmentRule.override("a", true, Set.of("a"), NONE).orElseThrow();
        assertEquals(new AssignmentRule.Verdict(MUON, AssignmentRule.Reason.FORCE_MUON), forced);
        assertEquals("forceMuon", forced.text());
        assertEquals(new AssignmentRule.Verdict(ADAMW, AssignmentRule.Reason.FORCE_ADAMW),
                AssignmentRule.override("a", true, NONE, Set.of("a")).orElseThrow());
        AssignmentRule.Verdict tied = AssignmentRule.override("a", true, NONE, NONE).orElseThrow();
        assertEquals(new AssignmentRule.Verdict(ADAMW, AssignmentRule.Reason.TIED_WEIGHTS), tied);
        assertEquals("tied weights", tied.text());
        assertEquals(java.util.Optional.empty(), AssignmentRule.override("a", false, Set.of("b"), Set.of("c")));
        assertEquals(new AssignmentRule.Verdict(MUON, AssignmentRule.Reason.CUSTOM_RULE),
                AssignmentRule.customRule(true));
        assertEquals("muonWhen rule", AssignmentRule.customRule(true).text());
    }

    private static AssignmentRule.Candidate c(String name, int dims, OptimizerKind kind) {
        return new AssignmentRule.Candidate(name, dims, kind);
    }

    static Stream<Arguments> outputLayerCases() {
        List<AssignmentRule.Candidate> mlp = List.of(c("fc1.weight", 2, MUON), c("fc1.bias", 1, ADAMW),
                c("fc2.weight", 2, MUON), c("fc3.weight", 2, MUON));
        return Stream.of(
                Arguments.of("the last matrix moves", mlp, "fc3.weight", NONE, NONE, OptionalInt.of(3)),
                Arguments.of("forced to Muon", mlp, "fc3.weight", Set.of("fc3.weight"), NONE, OptionalInt.empty()),
                Arguments.of("a head forced elsewhere", mlp, "fc3.weight", NONE, Set.of("fc1.weight"),
                        OptionalInt.empty()),
                Arguments.of("frozen last matrix", mlp.subList(0, 3), "fc3.weight", NONE, NONE, OptionalInt.empty()),
                Arguments.of("the only matrix on Muon", List.of(c("fc1.weight", 2, ADAMW), c("fc2.weight", 2, MUON)),
                        "fc2.weight", NONE, NONE, OptionalInt.empty()),
                Arguments.of("a head by name", List.of(c("lm_head.weight", 2, ADAMW), c("a.weight", 2, MUON),
                        c("b.weight", 2, MUON)), "b.weight", NONE, NONE, OptionalInt.empty()),
                Arguments.of("a head by its dotted name", List.of(
                        new AssignmentRule.Candidate("01head_weight", "head.weight", 2, ADAMW),
                        new AssignmentRule.Candidate("02Linear_weight", "Linear.weight", 2, MUON),
                        new AssignmentRule.Candidate("03Linear_weight", "Linear.weight", 2, MUON)),
                        "03Linear_weight", NONE, NONE, OptionalInt.empty()),
                Arguments.of("not a head by its own name", List.of(
                        new AssignmentRule.Candidate("head", "Linear.weight", 2, MUON),
                        new AssignmentRule.Candidate("b", "Linear.weight", 2, MUON)),
                        "b", NONE, NONE, OptionalInt.of(1)),
                Arguments.of("no matrix", List.of(c("bias", 1, ADAMW)), null, NONE, NONE, OptionalInt.empty()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("outputLayerCases")
    void outputLayer_movesTheLastMatrix_unlessAnExceptionHolds(String label, List<AssignmentRule.Candidate> trainable,
                                                               String last, Set<String> forceMuon,
                                                               Set<String> forceAdamW, OptionalInt expected) {
        assertEquals(expected, AssignmentRule.outputLayer(trainable, last, forceMuon, forceAdamW));
    }

    static Stream<Arguments> refusedShapes() {
        MuonConfig defaults = MuonConfig.defaults();
        return Stream.of(
                Arguments.of(new long[] {8}, defaults,
                        "Muon only supports 2-D parameters; parameter 'p' has shape [8]"),
                Arguments.of(new long[] {8, 3, 3, 3}, defaults, "Muon only supports 2-D parameters; parameter 'p' has"
                        + " shape [8, 3, 3, 3]. To flatten a 4-D conv filter to [8, 27], use"
                        + " MuonConfig.withConvWeights(ConvWeights.FLATTEN)"),
                Arguments.of(new long[] {2, 8, 4}, defaults, "Muon only supports 2-D parameters; parameter 'p' has"
                        + " shape [2, 8, 4]. To treat a 3-D parameter as a batch of 2 matrices, use"
                        + " MuonConfig.withStackedWeights(StackedWeights.BATCH)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusedShapes")
    void matrixOf_refusesWhatTheConfigDoesNotAllow_namingTheSetting(long[] shape, MuonConfig config,
                                                                   String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AssignmentRule.matrixOf(shape, config, "parameter 'p'"));
        assertEquals(message, e.getMessage());
    }

    @Test
    void matrixOf_flattensFilters_andBatchesStacks_whenAllowed() {
        MuonConfig config = MuonConfig.defaults().withConvWeights(ConvWeights.FLATTEN)
                .withStackedWeights(StackedWeights.BATCH);
        assertEquals(new AssignmentRule.Matrix(0, 8, 27),
                AssignmentRule.matrixOf(new long[] {8, 3, 3, 3}, config, "p"));
        assertEquals(new AssignmentRule.Matrix(2, 8, 4), AssignmentRule.matrixOf(new long[] {2, 8, 4}, config, "p"));
        assertEquals(new AssignmentRule.Matrix(0, 5, 7), AssignmentRule.matrixOf(new long[] {5, 7}, config, "p"));
    }
}
