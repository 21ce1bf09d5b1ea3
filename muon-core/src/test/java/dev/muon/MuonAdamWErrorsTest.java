package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static dev.muon.ErrorRows.assertRejected;
import static dev.muon.ErrorRows.row;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every rejected input of {@link MuonAdamW}'s builder, {@link AdamWConfig}, the schedules and the lr accessors:
 * one row per bad input, each with the message it must give.
 */
@ExtendWith(NativeScopePerTest.class)
class MuonAdamWErrorsTest {
    /** A tiny model: one hidden matrix [5, 4], one bias, one embedding ({@link CheckpointTest#small}). */
    static Map<String, Tensor> small() {
        return CheckpointTest.small(torch.ScalarType.Float, 5);
    }

    /** {@link #small()}, changed by {@code edit}. */
    static Map<String, Tensor> small(Consumer<Map<String, Tensor>> edit) {
        Map<String, Tensor> named = small();
        edit.accept(named);
        return named;
    }

    /** A MuonAdamW over {@link #small()} after {@code change}. */
    static MuonAdamW changed(Consumer<MuonAdamW> change) {
        MuonAdamW opt = MuonAdamW.builder(small()).build();
        change.accept(opt);
        return opt;
    }

    static Stream<Arguments> invalidInputs() {
        return Stream.of(
                row("override_inBothLists_isRejected",
                        () -> MuonAdamW.builder(small()).forceMuon("fc1.weight").forceAdamW("fc1.weight").build(),
                        "parameter 'fc1.weight' is in both forceMuon and forceAdamW; name it in one list only"),
                row("forceMuon_unknownName_isRejected",
                        () -> MuonAdamW.builder(small()).forceMuon("fc2.weight").build(),
                        "forceMuon names 'fc2.weight', which is not a parameter; parameters are "
                                + "[embed.weight, fc1.weight, fc1.bias]"),
                row("forceAdamW_unknownName_isRejected",
                        () -> MuonAdamW.builder(small()).forceAdamW("head.weight").build(),
                        "forceAdamW names 'head.weight', which is not a parameter; parameters are "
                                + "[embed.weight, fc1.weight, fc1.bias]"),
                row("forceMuon_frozenName_isRejected",
                        () -> MuonAdamW.builder(small(named -> named.get("embed.weight").requires_grad_(false)))
                                .forceMuon("embed.weight").build(),
                        "forceMuon names 'embed.weight', which does not require grad and is left out"),
                row("forceMuon_1dParameter_isRejectedByMuonWithItsName",
                        () -> MuonAdamW.builder(small()).forceMuon("fc1.bias").build(),
                        "Muon only supports 2-D parameters; parameter 'fc1.bias' has shape [5] (sent to Muon by "
                                + "forceMuon)"),
                row("forceMuon_tiedWeight_isRejected",
                        () -> MuonAdamW.builder(small(named -> named.put("head.weight", named.get("embed.weight"))))
                                .forceMuon("head.weight").build(),
                        "parameter 'head.weight' is tied to another name and tied weights go to AdamW; "
                                + "remove it from forceMuon"),
                row("orthogonalityErrorFor_adamWParameter_isRejected",
                        () -> MuonAdamW.builder(small()).orthogonalityErrorFor("fc1.bias").build(),
                        "orthogonalityErrorFor names 'fc1.bias', which is on AdamW; only Muon parameters are "
                                + "orthogonalized"),
                row("orthogonalityErrorFor_unknownName_isRejected",
                        () -> MuonAdamW.builder(small()).orthogonalityErrorFor("fc9.weight").build(),
                        "orthogonalityErrorFor names 'fc9.weight', which is not a parameter; parameters are "
                                + "[embed.weight, fc1.weight, fc1.bias]"),
                row("noTrainableParameters_isRejected",
                        () -> MuonAdamW.builder(small(named -> named.values().forEach(t -> t.requires_grad_(false))))
                                .build(),
                        "namedParameters must hold at least one parameter that requires grad, got 3 parameters, "
                                + "3 frozen"),
                row("undefinedParameter_isRejected",
                        () -> MuonAdamW.builder(small(named -> named.put("ghost", new Tensor()))).build(),
                        "parameter 'ghost' is null or undefined"),
                row("adamW_lrNegative_isRejected", () -> AdamWConfig.defaults().withLr(-1e-3),
                        "lr must be >= 0, got -0.001"),
                row("adamW_lrNaN_isRejected", () -> AdamWConfig.defaults().withLr(Double.NaN),
                        "lr must be finite, got NaN"),
                row("adamW_beta1One_isRejected", () -> AdamWConfig.defaults().withBetas(1.0, 0.999),
                        "beta1 must be in [0, 1), got 1.0"),
                row("adamW_beta2Negative_isRejected", () -> AdamWConfig.defaults().withBetas(0.9, -0.1),
                        "beta2 must be in [0, 1), got -0.1"),
                row("adamW_epsNegative_isRejected", () -> AdamWConfig.defaults().withEps(-1e-8),
                        "eps must be >= 0, got -1.0E-8"),
                row("adamW_weightDecayInfinite_isRejected",
                        () -> AdamWConfig.defaults().withWeightDecay(Double.POSITIVE_INFINITY),
                        "weightDecay must be finite, got Infinity"),
                row("dropIn_amsgrad_isRejected", () -> {
                    AdamWOptions options = new AdamWOptions(1e-3);
                    options.amsgrad().put(true);
                    return AdamWConfig.of(options);
                }, "amsgrad must be false, got true: MuonAdamW does not offer AMSGrad"),
                row("setLr_groupOutOfRange_isRejected", () -> changed(opt -> opt.setLr(2, 0.1)),
                        "group must be 0 (Muon) or 1 (AdamW), got 2"),
                row("setLr_negative_isRejected", () -> changed(opt -> opt.setLr(MuonAdamW.ADAMW_GROUP, -1)),
                        "lr must be >= 0, got -1.0"),
                row("warmupCosine_totalNotAfterWarmup_isRejected", () -> LrSchedule.warmupCosine(100, 100, 0),
                        "totalSteps must be > warmupSteps (100), got 100"),
                row("warmupCosine_minFactorAboveOne_isRejected", () -> LrSchedule.warmupCosine(0, 10, 1.5),
                        "minFactor must be in [0, 1], got 1.5"),
                row("warmupCosine_negativeWarmup_isRejected", () -> LrSchedule.warmupCosine(-1, 10, 0),
                        "warmupSteps must be >= 0, got -1"),
                row("wsd_zeroDecay_isRejected", () -> LrSchedule.warmupStableDecay(10, 10, 0, 0),
                        "decaySteps must be >= 1, got 0"),
                row("wsd_negativeStable_isRejected", () -> LrSchedule.warmupStableDecay(10, -5, 10, 0),
                        "stableSteps must be >= 0, got -5"),
                row("schedule_negativeStep_isRejected", () -> LrSchedule.constant().factor(-1),
                        "step must be >= 0, got -1"),
                row("scheduler_baseLrCount_isRejected",
                        () -> LrScheduler.of(MuonAdamW.builder(small()).build(), LrSchedule.constant(), 0.1),
                        "baseLrs must hold one lr per group (2), got 1"),
                row("scheduler_baseLrNegative_isRejected",
                        () -> LrScheduler.of(MuonAdamW.builder(small()).build(), LrSchedule.constant(), 0.1, -0.1),
                        "baseLrs[1] must be finite and >= 0, got -0.1"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidInputs")
    void invalidInput_isRejectedWithMessage(String name, Supplier<Object> call, String message) {
        assertRejected(call, message);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("emptyMuonModels")
    void emptyMuonGroup_isRejectedWithReasonAndTable(String name, Map<String, Tensor> named) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MuonAdamW.builder(named).build());
        assertTrue(e.getMessage().startsWith("no parameter was assigned to Muon, so this would train with AdamW "
                + "alone."), e.getMessage());
        assertTrue(e.getMessage().contains("allowEmptyMuon(true)"), e.getMessage());
        for (String n : named.keySet()) {
            assertTrue(e.getMessage().contains(n), "the table in the message lists " + n);
        }
    }

    static Stream<Arguments> emptyMuonModels() {
        Map<String, Tensor> onlyVectors = new LinkedHashMap<>();
        onlyVectors.put("norm.weight", torch.ones(4).requires_grad_(true));
        onlyVectors.put("norm.bias", torch.zeros(4).requires_grad_(true));
        Map<String, Tensor> onlyEmbeddingAndHead = new LinkedHashMap<>();
        onlyEmbeddingAndHead.put("embed.weight", torch.randn(10, 4).requires_grad_(true));
        onlyEmbeddingAndHead.put("lm_head.weight", torch.randn(10, 4).requires_grad_(true));
        Map<String, Tensor> ruleSaysNo = new LinkedHashMap<>();
        ruleSaysNo.put("layers.0.weight", torch.randn(4, 4).requires_grad_(true));
        return Stream.of(Arguments.of("onlyVectors", onlyVectors),
                Arguments.of("onlyEmbeddingAndHead", onlyEmbeddingAndHead),
                Arguments.of("frozenMatrix", frozen(ruleSaysNo)));
    }

    private static Map<String, Tensor> frozen(Map<String, Tensor> named) {
        Map<String, Tensor> copy = new LinkedHashMap<>(named);
        copy.get("layers.0.weight").requires_grad_(false);
        copy.put("layers.0.bias", torch.zeros(4).requires_grad_(true));
        return copy;
    }
}
