package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.tracker.Tracker;
import dev.muon.MuonConfig;
import dev.muon.Orthogonalization;
import dev.muon.StateStorage;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Every refusal of the two optimizers, one row per bad input: the exception names the setting or parameter, the
 * rule and the value; and a refused update changes nothing.
 */
class ErrorsTest {
    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    private static NDArray ones(long... shape) {
        return manager.get().ones(new Shape(shape));
    }

    /** A block with a hidden matrix, a bias and a head, as {@link TinyModel} holds them. */
    private static TinyModel model() {
        return new TinyModel(manager.get(), false);
    }

    /** Updates every parameter of {@code model} once with ones. */
    private static void stepOnce(ai.djl.training.optimizer.Optimizer opt, TinyModel model) {
        model.arrays.forEach((name, a) -> opt.update(model.ids.get(name), a, a.onesLike()));
    }

    static Stream<Arguments> refusals() {
        String unbound = " is not bound to a model, so it cannot tell which parameter DJL hands it (DJL names them "
                + "by ids only). Bind it with the trainer: optimizer.trainingConfig(loss), or config.optOptimizer("
                + "optimizer).addTrainingListeners(optimizer); or give the block at build with optBlock(block)";
        return Stream.of(
                Arguments.of("Muon bound to no model", (Executable) () -> Muon.builder().build()
                        .update("x", ones(4, 4), ones(4, 4)), IllegalStateException.class, "Muon" + unbound),
                Arguments.of("MuonAdamW bound to no model", (Executable) () -> MuonAdamW.builder().build()
                        .assignment(), IllegalStateException.class, "MuonAdamW" + unbound),
                Arguments.of("bfloat16 Newton-Schulz", (Executable) () -> Muon.builder().optBlock(model().block)
                        .optConfig(MuonConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16)).build(),
                        IllegalArgumentException.class, "nsPrecision = BFLOAT16 is not supported by muon-djl: "
                                + "DJL's conversion to bfloat16 aborts the JVM, so Newton-Schulz runs in float32 (the "
                                + "default) or FLOAT64"),
                Arguments.of("state in files", (Executable) () -> Muon.builder().optBlock(model().block)
                        .optStateStorage(StateStorage.files(java.nio.file.Path.of("/tmp"))).build(),
                        IllegalArgumentException.class, "stateStorage = FILES is not supported by muon-djl: its "
                                + "buffers are NDArrays of DJL's engine, kept beside their parameters, and it has no "
                                + "path that moves them to host memory or files (muon-core's Muon and MuonAdamW "
                                + "have)"),
                Arguments.of("Muon state in host memory", (Executable) () -> MuonAdamW.builder()
                        .optBlock(model().block).optMuonStateStorage(StateStorage.hostMemory()).build(),
                        IllegalArgumentException.class, "stateStorage = HOST_MEMORY is not supported by muon-djl: "
                                + "its buffers are NDArrays of DJL's engine, kept beside their parameters, and it has "
                                + "no path that moves them to host memory or files (muon-core's Muon and MuonAdamW "
                                + "have)"),
                Arguments.of("the exact SVD", (Executable) () -> MuonAdamW.builder().optBlock(model().block)
                        .optMuon(MuonConfig.defaults().withOrthogonalization(Orthogonalization.EXACT_SVD)).build(),
                        IllegalArgumentException.class, "orthogonalization = EXACT_SVD is not supported by "
                                + "muon-djl: DJL's NDArray API has no SVD"),
                Arguments.of("the Gram kernel in float64", (Executable) () -> Muon.builder().optBlock(model().block)
                        .optConfig(MuonConfig.defaults().withNsAlgorithm(NsAlgorithm.GRAM)
                                .withNsPrecision(NsPrecision.FLOAT64)).build(),
                        IllegalArgumentException.class, "nsAlgorithm = GRAM is not supported by muon-djl with "
                                + "nsPrecision = FLOAT64: its Gram kernel is muon-core's native float32 one (use "
                                + "FLOAT32, or AUTO or GEMM)"),
                Arguments.of("DJL's L2 weight decay", (Executable) () -> MuonAdamW.builder().optBlock(model().block)
                        .optWeightDecays(0.1f).build(), IllegalArgumentException.class,
                        "optWeightDecays must be 0, got 0.1: it adds DJL's L2 term to the gradient; the decoupled "
                                + "weight decay is the config's (optMuon(MuonConfig.withWeightDecay) and "
                                + "optAdamW(AdamWConfig.withWeightDecay))"),
                Arguments.of("a negative update count", (Executable) () -> MuonAdamW.builder()
                        .optBeginNumUpdate(-1).build(), IllegalArgumentException.class,
                        "optBeginNumUpdate must be >= 0, got -1"),
                Arguments.of("forceMuon of no parameter", (Executable) () -> MuonAdamW.builder()
                        .optBlock(model().block).optForceMuon("fc9_weight").build(), IllegalArgumentException.class,
                        "optForceMuon names 'fc9_weight', which is not a parameter; parameters are [01hidden_weight, "
                                + "01hidden_bias, 02out_weight]"),
                Arguments.of("a null name in forceMuon", (Executable) () -> MuonAdamW.builder()
                        .optBlock(model().block).optForceMuon("01hidden_weight", null).build(),
                        IllegalArgumentException.class,
                        "optForceMuon names 'null', which is not a parameter; parameters are [01hidden_weight, "
                                + "01hidden_bias, 02out_weight]"),
                Arguments.of("a name in both lists", (Executable) () -> MuonAdamW.builder().optBlock(model().block)
                        .optForceMuon("02out_weight").optForceAdamW("02out_weight").build(),
                        IllegalArgumentException.class, "parameter '02out_weight' is in both optForceMuon and "
                                + "optForceAdamW; name it in one list only"),
                Arguments.of("a bias forced to Muon", (Executable) () -> MuonAdamW.builder().optBlock(model().block)
                        .optForceMuon("01hidden_bias").build().assignment(), IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter '01hidden_bias' has shape [6] (sent to Muon by "
                                + "optForceMuon)"),
                Arguments.of("forceAdamW of a frozen parameter", (Executable) () -> MuonAdamW.builder()
                        .optBlock(new ParamBlock().param("w", ones(4, 4)).frozen("v", ones(4, 4)))
                        .optForceAdamW("v").build().assignment(), IllegalArgumentException.class,
                        "optForceAdamW names 'v', which does not require grad and is left out"),
                Arguments.of("nothing on Muon", (Executable) () -> MuonAdamW.builder()
                        .optBlock(new ParamBlock().param("bias", ones(4))).build().assignment(),
                        IllegalArgumentException.class, "no parameter was assigned to Muon, so this would train with "
                                + "AdamW alone. Muon takes 2-D and 4-D weights whose names do not look like an "
                                + "embedding or a head; check the names below, send parameters with optForceMuon(..) "
                                + "or optMuonWhen(..), or call optAllowEmptyMuon(true) if AdamW alone is intended.\n"
                                + "name  shape  dtype     opt     lr           state bytes  why\n"
                                + "bias  [4]    float32   adamw   0.001000              32  fewer than 2 dims\n"
                                + "0 on Muon, 1 on AdamW; state 32 bytes = 1.000 x AdamW alone (32)\n"),
                Arguments.of("nothing trainable", (Executable) () -> MuonAdamW.builder()
                        .optBlock(new ParamBlock().frozen("v", ones(4, 4))).build().assignment(),
                        IllegalArgumentException.class, "the block must hold at least one parameter that requires "
                                + "grad, got 1 parameters, 1 frozen"),
                Arguments.of("a shared parameter forced to Muon", (Executable) () -> {
                    ParamBlock shared = new ParamBlock().param("weight", ones(4, 4));
                    MuonAdamW.builder().optBlock(new ParamBlock().child("a", shared).child("b", shared)
                            .param("w", ones(4, 4))).optForceMuon("01a_weight").build().assignment();
                }, IllegalArgumentException.class, "parameter '01a_weight' is tied to another name and tied "
                        + "weights go to AdamW; remove it from optForceMuon"),
                Arguments.of("a conv filter without FLATTEN", (Executable) () -> Muon.builder()
                        .optBlock(new ParamBlock().param("conv", ones(4, 2, 3, 3))).build()
                        .update("x", ones(4, 4), ones(4, 4)),
                        IllegalArgumentException.class, "Muon only supports 2-D parameters; parameter 'conv' has "
                                + "shape [4, 2, 3, 3]. To flatten a 4-D conv filter to [4, 18], use "
                                + "MuonConfig.withConvWeights(ConvWeights.FLATTEN)"),
                Arguments.of("an integer parameter", (Executable) () -> Muon.builder()
                        .optBlock(new ParamBlock().param("w", ones(4, 4).toType(DataType.INT32, false))).build()
                        .update("x", ones(4, 4), ones(4, 4)), IllegalArgumentException.class,
                        "Muon only supports floating-point parameters; parameter 'w' has dtype int32"),
                Arguments.of("another block's parameter", (Executable) () -> Muon.builder()
                        .optBlock(new ParamBlock().param("w", ones(4, 4))).build()
                        .update("uid-another-block", ones(4, 4), ones(4, 4)), IllegalArgumentException.class,
                        "Muon was handed an array of shape [4, 4], which is not a parameter of the block it is bound "
                                + "to (w): an optimizer serves one model. Build a new Muon for each trainer of another "
                                + "model"),
                Arguments.of("MuonAdamW: another block's named parameter", (Executable) () -> {
                    NDArray other = ones(3, 6);
                    other.setName("weight");
                    MuonAdamW.builder().optBlock(model().block).build().update("uid-another-block", other,
                            ones(3, 6));
                }, IllegalArgumentException.class, "MuonAdamW was handed an array named 'weight' of shape [3, 6], "
                        + "which is not a parameter of the block it is bound to (01hidden_weight, 01hidden_bias, "
                        + "02out_weight): an optimizer serves one model. Build a new MuonAdamW for each trainer of "
                        + "another model"),
                Arguments.of("a bfloat16 parameter", (Executable) () -> DjlSupport.requireSupported(DataType.BFLOAT16,
                        "parameter 'w'"), IllegalArgumentException.class, "muon-djl does not update bfloat16 "
                                + "parameters (DJL's bfloat16 conversions abort the JVM); parameter 'w' has dtype "
                                + "bfloat16"),
                Arguments.of("a null block", (Executable) () -> Muon.builder().optBlock(null),
                        NullPointerException.class, "block must not be null"),
                Arguments.of("a null config", (Executable) () -> Muon.builder().optConfig(null),
                        NullPointerException.class, "config must not be null"),
                Arguments.of("a null Muon config", (Executable) () -> MuonAdamW.builder().optMuon(null),
                        NullPointerException.class, "muon config must not be null"),
                Arguments.of("a null AdamW config", (Executable) () -> MuonAdamW.builder().optAdamW(null),
                        NullPointerException.class, "adamW config must not be null"),
                Arguments.of("a null tracker", (Executable) () -> MuonAdamW.builder().optLearningRateTracker(null),
                        NullPointerException.class, "learningRateTracker must not be null"),
                Arguments.of("a null Muon tracker", (Executable) () -> MuonAdamW.builder()
                        .optMuonLearningRateTracker(null), NullPointerException.class,
                        "muonLearningRateTracker must not be null"),
                Arguments.of("a null AdamW tracker", (Executable) () -> MuonAdamW.builder()
                        .optAdamWLearningRateTracker(null), NullPointerException.class,
                        "adamWLearningRateTracker must not be null"),
                Arguments.of("a null rule", (Executable) () -> MuonAdamW.builder().optMuonWhen(null),
                        NullPointerException.class, "muonWhen rule must not be null"),
                Arguments.of("a null policy", (Executable) () -> Muon.builder().optNonFinitePolicy(null),
                        NullPointerException.class, "nonFinitePolicy must not be null"),
                Arguments.of("a tracker's NaN lr", (Executable) () -> {
                    TinyModel m = model();
                    stepOnce(MuonAdamW.builder().optBlock(m.block).optLearningRateTracker(Tracker.fixed(Float.NaN))
                            .build(), m);
                }, IllegalArgumentException.class, "lr must be finite, got NaN"),
                Arguments.of("an uninitialized block", (Executable) () -> MuonAdamW.builder().optBlock(
                        new ParamBlock().child("fc", new ParamBlock()
                                .uninitialized("weight", new Shape(4, 4)))).build().assignment(),
                        IllegalStateException.class, "parameter '01fc_weight' is not initialized: the optimizer "
                                + "classifies the block's parameters once they exist (after trainer.initialize(...))"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void refusal_namesTheSettingTheRuleAndTheValue(String label, Executable call,
                                                   Class<? extends Throwable> type, String message) {
        Throwable e = assertThrows(type, call, label);
        assertEquals(message, e.getMessage(), label);
    }

    /** Plain Muon checks every parameter when it binds to a block whose parameters exist: a bias is refused then. */
    @Test
    void plainMuon_refusesABias_whenItBinds_beforeTouchingAnything() {
        TinyModel m = model();
        Map<String, float[]> before = m.snapshot();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Muon.builder().optBlock(m.block).build());
        assertEquals("Muon only supports 2-D parameters; parameter '01hidden_bias' has shape [6] (Muon updates "
                + "every trainable parameter of its block; MuonAdamW sends biases and norms to AdamW)", e.getMessage());
        for (String name : TinyModel.NAMES) {
            assertArrayEquals(before.get(name), m.snapshot().get(name), name);
        }
    }
}
