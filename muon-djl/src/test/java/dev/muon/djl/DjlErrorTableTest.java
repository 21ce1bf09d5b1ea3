package dev.muon.djl;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import ai.djl.training.optimizer.Optimizer;
import dev.muon.ConvWeights;
import dev.muon.MomentumPrecision;
import dev.muon.MuonConfig;
import dev.muon.MuownConfig;
import dev.muon.NonFinitePolicy;
import dev.muon.Orthogonalization;
import dev.muon.StackedWeights;
import dev.muon.golden.Refusals;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Bad input to muon-djl's two optimizers, side by side: one row per bad input and binding, in the categories of
 * muon-core's {@code BindingErrorTableTest} (a parameter's dtype, its shape on Muon, a non-finite gradient, a
 * gradient unlike its parameter, a setting muon-djl refuses). Each row asserts the exception's type, a one-line
 * message that names the parameter (where there is one), the rule and the value, and that the refused call changed
 * nothing: the bits of every parameter, of every gradient (on the arrays and handed over), of the optimizer's
 * buffers and moments, and its step and skip counts. No row creates a bfloat16 array (DJL 0.36.0 aborts the JVM):
 * the bfloat16 rule is asked of {@link DjlSupport#requireSupported} with the dtype alone. Not a refusal, so not a
 * row: a NaN parameter value (no optimizer checks parameter values; the test at the end keeps that promise).
 */
class DjlErrorTableTest {
    /** A bad call, and what it must leave as it was. */
    private record Scene(Executable call, Optimizer optimizer, ParamBlock block, List<NDArray> extra) {
    }

    private static Arguments row(String category, String binding, String what, Function<NDManager, Scene> scene,
                                 Class<? extends RuntimeException> type, String message, String parameter) {
        return Arguments.of(category + " | " + binding + " | " + what, scene, type, message, parameter);
    }

    private static final String EVERY_PARAMETER = " (Muon updates every trainable parameter of its block; MuonAdamW "
            + "sends biases and norms to AdamW)";

    static Stream<Arguments> badInputs() {
        return Stream.of(Stream.of(
                // A parameter of a dtype muon-djl does not update.
                row("dtype", "Muon", "an integer parameter",
                        m -> muonBuild(new ParamBlock().param("w", m.ones(new Shape(4, 4)).toType(DataType.INT32,
                                false)), b -> b),
                        IllegalArgumentException.class,
                        "Muon only supports floating-point parameters; parameter 'w' has dtype int32", "'w'"),
                row("dtype", "MuonAdamW", "an integer matrix, which the rule sends to Muon",
                        m -> hybridBuild(m, "idx", "weight", m.ones(new Shape(4, 4)).toType(DataType.INT32, false),
                                b -> b),
                        IllegalArgumentException.class,
                        "Muon only supports floating-point parameters; parameter '03idx_weight' has dtype int32 "
                                + "(sent to Muon by the default rule as a hidden matrix; "
                                + "optForceAdamW(\"03idx_weight\") keeps it on "
                                + "AdamW)", "'03idx_weight'"),
                row("dtype", "MuonAdamW", "an integer bias, which the rule sends to AdamW",
                        m -> hybridBuild(m, "fc", "bias", m.ones(new Shape(4)).toType(DataType.INT32, false), b -> b),
                        IllegalArgumentException.class,
                        "AdamW only supports floating-point parameters; parameter '03fc_bias' has dtype int32",
                        "'03fc_bias'"),
                row("dtype", "Muon", "the bfloat16 rule (asked without an array)",
                        m -> call(() -> DjlSupport.requireSupported(DataType.BFLOAT16, "parameter 'w'")),
                        IllegalArgumentException.class, "muon-djl does not update bfloat16 parameters (DJL's "
                                + "bfloat16 conversions abort the JVM); parameter 'w' has dtype bfloat16", "'w'"),
                row("dtype", "MuonAdamW", "the bfloat16 rule (asked without an array)",
                        m -> call(() -> DjlSupport.requireSupported(DataType.BFLOAT16, "parameter '01hidden_bias'")),
                        IllegalArgumentException.class, "muon-djl does not update bfloat16 parameters (DJL's "
                                + "bfloat16 conversions abort the JVM); parameter '01hidden_bias' has dtype bfloat16",
                        "'01hidden_bias'"),

                // A parameter of a shape Muon cannot take.
                row("shape", "Muon", "a 1-D parameter",
                        m -> muonBuild(new ParamBlock().param("w", m.ones(new Shape(4, 4)))
                                .param("b", m.ones(new Shape(64))), b -> b),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 'b' has shape [64]" + EVERY_PARAMETER, "'b'"),
                row("shape", "MuonAdamW", "a 1-D parameter forced to Muon",
                        m -> hybridBuild(m, "fc", "bias", m.ones(new Shape(64)), b -> b.optForceMuon("03fc_bias")),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter '03fc_bias' has shape [64] (sent to Muon by "
                                + "optForceMuon)", "'03fc_bias'"),
                row("shape", "Muon", "a 0-dim parameter",
                        m -> muonBuild(new ParamBlock().param("s", m.ones(new Shape())), b -> b),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 's' has shape []" + EVERY_PARAMETER, "'s'"),
                row("shape", "MuonAdamW", "a 0-dim parameter forced to Muon",
                        m -> hybridBuild(m, "norm", "scale", m.ones(new Shape()), b -> b.optForceMuon("03norm_scale")),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter '03norm_scale' has shape [] (sent to Muon by "
                                + "optForceMuon)", "'03norm_scale'"),
                row("shape", "Muon", "a 5-D parameter",
                        m -> muonBuild(new ParamBlock().param("t", m.ones(new Shape(2, 2, 2, 2, 2))), b -> b),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 't' has shape [2, 2, 2, 2, 2]", "'t'"),
                row("shape", "MuonAdamW", "a 5-D parameter forced to Muon",
                        m -> hybridBuild(m, "blob", "weight", m.ones(new Shape(2, 2, 2, 2, 2)),
                                b -> b.optForceMuon("03blob_weight")),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter '03blob_weight' has shape [2, 2, 2, 2, 2] "
                                + "(sent to Muon by optForceMuon)", "'03blob_weight'"),
                row("shape", "Muon", "a 3-D parameter with stackedWeights REJECT",
                        m -> muonBuild(new ParamBlock().param("e", m.ones(new Shape(4, 6, 5))),
                                b -> b.optConfig(MuonConfig.defaults().withStackedWeights(StackedWeights.REJECT))),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 'e' has shape [4, 6, 5]. To treat a 3-D "
                                + "parameter as a batch of 4 matrices, use "
                                + "MuonConfig.withStackedWeights(StackedWeights.BATCH)", "'e'"),
                row("shape", "MuonAdamW", "a 3-D parameter forced to Muon with stackedWeights REJECT",
                        m -> hybridBuild(m, "experts", "weight", m.ones(new Shape(4, 6, 5)),
                                b -> b.optForceMuon("03experts_weight")
                                .optMuon(MuonConfig.defaults().withStackedWeights(StackedWeights.REJECT))),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter '03experts_weight' has shape [4, 6, 5]. "
                                + "To treat a 3-D parameter as a batch of 4 matrices, use "
                                + "MuonConfig.withStackedWeights(StackedWeights.BATCH) (sent to Muon by optForceMuon)",
                        "'03experts_weight'"),
                row("shape", "Muon", "a 4-D parameter with convWeights REJECT",
                        m -> muonBuild(new ParamBlock().param("conv", m.ones(new Shape(4, 2, 3, 3))),
                                b -> b.optConfig(MuonConfig.defaults().withConvWeights(ConvWeights.REJECT))),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 'conv' has shape [4, 2, 3, 3]. To flatten a "
                                + "4-D conv filter to [4, 18], use MuonConfig.withConvWeights(ConvWeights.FLATTEN)",
                        "'conv'"),
                row("shape", "MuonAdamW", "a 4-D parameter with convWeights REJECT",
                        m -> hybridBuild(m, "conv", "weight", m.ones(new Shape(4, 2, 3, 3)),
                                b -> b.optMuon(MuonConfig.defaults().withConvWeights(ConvWeights.REJECT))),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter '03conv_weight' has shape [4, 2, 3, 3]. "
                                + "To flatten a 4-D conv filter to [4, 18], use "
                                + "MuonConfig.withConvWeights(ConvWeights.FLATTEN) "
                                + "(sent to Muon by the default rule as a hidden matrix; "
                                + "optForceAdamW(\"03conv_weight\") keeps it on AdamW)", "'03conv_weight'"),

                // A gradient holding NaN or Inf under RAISE, on the arrays as a backward pass leaves it.
                row("non-finite", "Muon", "a NaN gradient under RAISE",
                        m -> muonStep(m, NonFinitePolicy.RAISE, (model, grads) -> poison(grads, "v", Float.NaN)),
                        IllegalStateException.class, "the gradient of parameter 'v' holds NaN or Inf "
                                + "(nonFinitePolicy RAISE); nothing was changed", "'v'"),
                row("non-finite", "MuonAdamW", "a NaN gradient on a Muon parameter under RAISE",
                        m -> hybridStep(m, NonFinitePolicy.RAISE,
                                (model, grads) -> poison(grads, "01hidden_weight", Float.NaN)),
                        IllegalStateException.class, "the gradient of parameter '01hidden_weight' holds NaN or Inf "
                                + "(nonFinitePolicy RAISE); nothing was changed", "'01hidden_weight'"),
                row("non-finite", "MuonAdamW", "an Inf gradient on an AdamW parameter under RAISE",
                        m -> hybridStep(m, NonFinitePolicy.RAISE,
                                (model, grads) -> poison(grads, "01hidden_bias", Float.POSITIVE_INFINITY)),
                        IllegalStateException.class, "the gradient of parameter '01hidden_bias' holds NaN or Inf "
                                + "(nonFinitePolicy RAISE); nothing was changed", "'01hidden_bias'"),

                // A gradient unlike its parameter, handed over by a direct call of update.
                row("gradient", "Muon", "a gradient of another shape",
                        m -> muonHandOver(m, "v", grad -> grad.getManager().ones(new Shape(7, 5))),
                        IllegalStateException.class, "the gradient of parameter 'v' has shape [7, 5] but the "
                                + "parameter has shape [5, 7]", "'v'"),
                row("gradient", "MuonAdamW", "a gradient of another shape on a Muon parameter",
                        m -> hybridHandOver(m, "01hidden_weight", grad -> grad.getManager().ones(new Shape(3, 12))),
                        IllegalStateException.class, "the gradient of parameter '01hidden_weight' has shape [3, 12] "
                                + "but the parameter has shape [6, 6]", "'01hidden_weight'"),
                row("gradient", "MuonAdamW", "a gradient of another shape on an AdamW parameter",
                        m -> hybridHandOver(m, "01hidden_bias", grad -> grad.getManager().ones(new Shape(6, 1))),
                        IllegalStateException.class, "the gradient of parameter '01hidden_bias' has shape [6, 1] "
                                + "but the parameter has shape [6]", "'01hidden_bias'"),
                row("gradient", "Muon", "a gradient of another dtype",
                        m -> muonHandOver(m, "w", grad -> grad.toType(DataType.FLOAT64, true)),
                        IllegalStateException.class, "the gradient of parameter 'w' has dtype float64 but the "
                                + "parameter has dtype float32; a gradient must have its parameter's dtype", "'w'"),
                row("gradient", "MuonAdamW", "a gradient of another dtype on a Muon parameter",
                        m -> hybridHandOver(m, "01hidden_weight", grad -> grad.toType(DataType.FLOAT64, true)),
                        IllegalStateException.class, "the gradient of parameter '01hidden_weight' has dtype float64 "
                                + "but the parameter has dtype float32; a gradient must have its parameter's dtype",
                        "'01hidden_weight'"),
                row("gradient", "MuonAdamW", "a gradient of another dtype on an AdamW parameter",
                        m -> hybridHandOver(m, "01hidden_bias", grad -> grad.toType(DataType.FLOAT16, true)),
                        IllegalStateException.class, "the gradient of parameter '01hidden_bias' has dtype float16 "
                                + "but the parameter has dtype float32; a gradient must have its parameter's dtype",
                        "'01hidden_bias'")),

                // A setting muon-djl has no operation for, refused at build, by both optimizers alike.
                refusedSetting("the exact SVD", c -> c.withOrthogonalization(Orthogonalization.EXACT_SVD),
                        "orthogonalization = EXACT_SVD is not supported by muon-djl: DJL's NDArray API has no SVD"),
                refusedSetting("nsPrecision BFLOAT16", c -> c.withNsPrecision(NsPrecision.BFLOAT16), NS_BFLOAT16),
                refusedSetting("momentumPrecision BFLOAT16", c -> c.withMomentumPrecision(MomentumPrecision.BFLOAT16),
                        MOMENTUM_BFLOAT16),
                refusedSetting("Muown", c -> c.withNesterov(false).withMuown(MuownConfig.defaults()), MUOWN),
                refusedSetting("the symmetric kernel in float64", c -> c.withNsAlgorithm(NsAlgorithm.SYMMETRIC)
                        .withNsPrecision(NsPrecision.FLOAT64), SYMMETRIC_FLOAT64),
                Stream.of(row("setting", "Muon", "DJL's L2 weight decay",
                        m -> muonBuild(matrices(m), b -> b.optWeightDecays(0.1f)),
                        IllegalArgumentException.class, "optWeightDecays must be 0, got 0.1: it adds DJL's L2 term "
                                + "to the gradient; the decoupled weight decay is the config's "
                                + "(optConfig(MuonConfig.withWeightDecay))", null),
                row("setting", "MuonAdamW", "DJL's L2 weight decay",
                        m -> hybridBuild(m, null, null, null, b -> b.optWeightDecays(0.1f)),
                        IllegalArgumentException.class, "optWeightDecays must be 0, got 0.1: it adds DJL's L2 term "
                                + "to the gradient; the decoupled weight decay is the config's "
                                + "(optMuon(MuonConfig.withWeightDecay) and optAdamW(AdamWConfig.withWeightDecay))",
                        null)))
                .flatMap(rows -> rows);
    }

    /** A Muon setting muon-djl refuses: the same refusal from {@link Muon} and from {@link MuonAdamW}'s Muon group. */
    private static Stream<Arguments> refusedSetting(String what, UnaryOperator<MuonConfig> change, String message) {
        return Stream.of(
                row("setting", "Muon", what, m -> muonBuild(matrices(m), b -> b.optConfig(change.apply(
                        MuonConfig.defaults()))), IllegalArgumentException.class, message, null),
                row("setting", "MuonAdamW", what, m -> hybridBuild(m, null, null, null, b -> b.optMuon(change.apply(
                        MuonConfig.defaults()))), IllegalArgumentException.class, message, null));
    }

    private static final String NS_BFLOAT16 = "nsPrecision = BFLOAT16 is not supported by muon-djl: DJL's "
            + "conversion to bfloat16 aborts the JVM, so Newton-Schulz runs in float32 (the default) or FLOAT64";
    private static final String MOMENTUM_BFLOAT16 = "momentumPrecision = BFLOAT16 is not supported by muon-djl: "
            + "DJL's bfloat16 arrays abort the JVM, so the momentum buffer cannot be stored in bfloat16";
    private static final String MUOWN = "muown = on is not supported by muon-djl: muon-djl has no mapping of "
            + "Muown's row magnitudes, their Adam moments and the direction's own gradient; muon-core runs it";
    private static final String SYMMETRIC_FLOAT64 = "nsAlgorithm = SYMMETRIC is not supported by muon-djl with "
            + "nsPrecision = FLOAT64: its symmetric kernel is muon-core's native float32 one (use FLOAT32, or AUTO or "
            + "GEMM)";

    @ParameterizedTest(name = "{0}")
    @MethodSource("badInputs")
    void badInput_isRefusedInOneLineNamingIt_andChangesNothing(String label, Function<NDManager, Scene> setUp,
                                                                Class<? extends RuntimeException> type,
                                                                String message, String parameter) {
        try (NDManager manager = NDManager.newBaseManager()) {
            Scene scene = setUp.apply(manager);
            Map<String, String> before = snapshot(scene);

            RuntimeException e = assertThrows(type, scene.call(), label);

            Refusals.assertOneLineNaming(e, message, parameter);
            assertEquals(before, snapshot(scene), "the refused call changed nothing");
        }
    }

    /**
     * Parameter values are not checked: a NaN parameter with finite gradients is no refusal, and under SKIP no reason
     * to skip ({@link NonFinitePolicy} looks at gradients). The step is applied, and the other parameters move.
     */
    @Test
    void nanParameter_isNotChecked_theStepRuns_andTheOthersUpdate() {
        try (NDManager m = NDManager.newBaseManager()) {
            ParamBlock block = matrices(m);
            Map<String, String> ids = new LinkedHashMap<>();
            Map<String, NDArray> arrays = arrays(block, ids);
            arrays.get("v").set(new ai.djl.ndarray.index.NDIndex("0, 3"), Float.NaN);
            Muon muon = Muon.builder().optBlock(block).build();
            float[] w = arrays.get("w").toFloatArray();
            stepOnce(muon, arrays, ids, gradients(m, arrays, 10));
            assertEquals(1, muon.stepCount());
            assertEquals(0, muon.skippedSteps());
            assertFalse(java.util.Arrays.equals(w, arrays.get("w").toFloatArray()), "w moved");

            ParamBlock tiny = new TinyModel(m, false).block;
            Map<String, String> tinyIds = new LinkedHashMap<>();
            Map<String, NDArray> tinyArrays = arrays(tiny, tinyIds);
            tinyArrays.get("01hidden_weight").set(new ai.djl.ndarray.index.NDIndex("0, 3"), Float.NaN);
            MuonAdamW hybrid = MuonAdamW.builder().optBlock(tiny).build();
            float[] bias = tinyArrays.get("01hidden_bias").toFloatArray();
            stepOnce(hybrid, tinyArrays, tinyIds, gradients(m, tinyArrays, 10));
            assertEquals(1, hybrid.stepCount());
            assertEquals(0, hybrid.skippedSteps());
            assertFalse(java.util.Arrays.equals(bias, tinyArrays.get("01hidden_bias").toFloatArray()),
                    "the bias moved");
        }
    }

    // ---- scenes ----

    /** A call that needs no optimizer or block. */
    private static Scene call(Executable call) {
        return new Scene(call, null, null, List.of());
    }

    /** Two matrices, {@code w} [6, 4] and {@code v} [5, 7]: a block plain Muon takes. */
    private static ParamBlock matrices(NDManager m) {
        return new ParamBlock().param("w", TinyModel.values(m, new Shape(6, 4), 1))
                .param("v", TinyModel.values(m, new Shape(5, 7), 2));
    }

    /** Builds Muon bound to {@code block}; nothing is built before the call. */
    private static Scene muonBuild(ParamBlock block, UnaryOperator<Muon.Builder> settings) {
        return new Scene(() -> settings.apply(Muon.builder().optBlock(block)).build(), null, block, List.of());
    }

    /**
     * Builds MuonAdamW over {@link TinyModel}'s block and, unless null, a child {@code 03<child>} of one parameter
     * (DJL numbers it after TinyModel's two); nothing is built before the call.
     */
    private static Scene hybridBuild(NDManager m, String child, String name, NDArray extra,
                                     UnaryOperator<MuonAdamW.Builder> settings) {
        ParamBlock block = new TinyModel(m, false).block;
        if (child != null) {
            block.child(child, new ParamBlock().param(name, extra));
        }
        return new Scene(() -> settings.apply(MuonAdamW.builder().optBlock(block)).build().assignment(), null, block,
                List.of());
    }

    /** What spoils the gradients of the second step, given by name. */
    private interface Spoil {
        void accept(Map<String, NDArray> arrays, Map<String, NDArray> grads);
    }

    private static void poison(Map<String, NDArray> grads, String name, float value) {
        NDArray g = grads.get(name);
        float[] data = g.toFloatArray();
        data[3] = value;
        grads.put(name, g.getManager().create(data, g.getShape()));
    }

    /** Gradients of the arrays' shapes, from a seed. */
    private static Map<String, NDArray> gradients(NDManager m, Map<String, NDArray> arrays, int seed) {
        Map<String, NDArray> grads = new LinkedHashMap<>();
        int s = seed;
        for (Map.Entry<String, NDArray> e : arrays.entrySet()) {
            grads.put(e.getKey(), TinyModel.values(m, e.getValue().getShape(), ++s));
        }
        return grads;
    }

    /** Puts {@code grads} on the arrays with a backward pass of {@code Σ sum(p ⊙ g)}, as a trainer leaves them. */
    private static void attach(Map<String, NDArray> arrays, Map<String, NDArray> grads) {
        arrays.values().forEach(a -> {
            if (!a.hasGradient()) {
                a.setRequiresGradient(true);
            }
        });
        try (NDScope scope = new NDScope();
             GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            scope.suppressNotUsedWarning();
            NDArray loss = null;
            for (Map.Entry<String, NDArray> e : arrays.entrySet()) {
                NDArray term = e.getValue().mul(grads.get(e.getKey())).sum();
                loss = loss == null ? term : loss.add(term);
            }
            collector.backward(loss);
        }
    }

    /** Every parameter of {@code block} by name, and its id. */
    private static Map<String, NDArray> arrays(ParamBlock block, Map<String, String> ids) {
        Map<String, NDArray> arrays = new LinkedHashMap<>();
        block.getParameters().forEach(p -> {
            arrays.put(p.getKey(), p.getValue().getArray());
            ids.put(p.getKey(), p.getValue().getId());
        });
        return arrays;
    }

    /** One good step through every parameter, with the gradients on the arrays. */
    private static void stepOnce(Optimizer opt, Map<String, NDArray> arrays, Map<String, String> ids,
                                 Map<String, NDArray> grads) {
        attach(arrays, grads);
        arrays.forEach((name, a) -> opt.update(ids.get(name), a, a.getGradient()));
    }

    /** Muon over {@link #matrices} after one good step; the next step's gradients, spoiled, on the arrays. */
    private static Scene muonStep(NDManager m, NonFinitePolicy policy, Spoil spoil) {
        return spoiledStep(m, matrices(m), block -> Muon.builder().optBlock(block).optNonFinitePolicy(policy).build(),
                spoil);
    }

    /** MuonAdamW over {@link TinyModel} after one good step; the next step's gradients, spoiled, on the arrays. */
    private static Scene hybridStep(NDManager m, NonFinitePolicy policy, Spoil spoil) {
        return spoiledStep(m, new TinyModel(m, false).block,
                block -> MuonAdamW.builder().optBlock(block).optNonFinitePolicy(policy).build(), spoil);
    }

    /** Muon after one good step; then {@code name} is handed over with {@code bad(its good gradient)}. */
    private static Scene muonHandOver(NDManager m, String name, UnaryOperator<NDArray> bad) {
        return handOver(m, matrices(m), block -> Muon.builder().optBlock(block).build(), name, bad);
    }

    /** MuonAdamW after one good step; then {@code name} is handed over with {@code bad(its good gradient)}. */
    private static Scene hybridHandOver(NDManager m, String name, UnaryOperator<NDArray> bad) {
        return handOver(m, new TinyModel(m, false).block, block -> MuonAdamW.builder().optBlock(block).build(), name,
                bad);
    }

    /** The optimizer a build made, after one good step through every parameter: its arrays by name, their ids. */
    private record Stepped(Optimizer opt, Map<String, NDArray> arrays, Map<String, String> ids) {
    }

    private static Stepped afterOneStep(NDManager m, ParamBlock block, Function<ParamBlock, Optimizer> build) {
        Map<String, String> ids = new LinkedHashMap<>();
        Map<String, NDArray> arrays = arrays(block, ids);
        Optimizer opt = build.apply(block);
        stepOnce(opt, arrays, ids, gradients(m, arrays, 10));
        return new Stepped(opt, arrays, ids);
    }

    /** After one good step, the next step's gradients, spoiled, on the arrays; the call updates every parameter. */
    private static Scene spoiledStep(NDManager m, ParamBlock block, Function<ParamBlock, Optimizer> build,
                                     Spoil spoil) {
        Stepped s = afterOneStep(m, block, build);
        Map<String, NDArray> grads = gradients(m, s.arrays(), 20);
        spoil.accept(s.arrays(), grads);
        attach(s.arrays(), grads);
        return new Scene(() -> s.arrays().forEach((name, a) -> s.opt().update(s.ids().get(name), a, a.getGradient())),
                s.opt(), block, List.of());
    }

    /**
     * After one good step, the next step's gradients on the arrays; the call hands {@code name} over with
     * {@code bad(its good gradient)}.
     */
    private static Scene handOver(NDManager m, ParamBlock block, Function<ParamBlock, Optimizer> build, String name,
                                  UnaryOperator<NDArray> bad) {
        Stepped s = afterOneStep(m, block, build);
        attach(s.arrays(), gradients(m, s.arrays(), 20));
        NDArray grad = bad.apply(s.arrays().get(name).getGradient());
        return new Scene(() -> s.opt().update(s.ids().get(name), s.arrays().get(name), grad), s.opt(), block,
                List.of(grad));
    }

    /**
     * A state accessor's answer, or empty where the parameter is not that optimizer's to hold state for (another
     * block's, or the other side of a MuonAdamW, which the accessors refuse): it then has none to snapshot.
     */
    private static <T> java.util.Optional<T> ifItsOwn(java.util.function.Supplier<java.util.Optional<T>> read) {
        try {
            return read.get();
        } catch (IllegalArgumentException notItsParameter) {
            return java.util.Optional.empty();
        }
    }

    /**
     * The bits of everything a refused call must leave: every parameter and its gradient, the arrays handed over,
     * the optimizer's buffers and moments and its counts.
     */
    private static Map<String, String> snapshot(Scene scene) {
        Map<String, String> out = new LinkedHashMap<>();
        if (scene.block() != null) {
            scene.block().getParameters().forEach(p -> {
                NDArray a = p.getValue().getArray();
                out.put(p.getKey(), bits(a));
                if (a.hasGradient()) {
                    out.put(p.getKey() + " gradient", bits(a.getGradient()));
                }
                Device cpu = a.getDevice();
                if (scene.optimizer() instanceof Muon muon) {
                    ifItsOwn(() -> muon.momentumBuffer(p.getKey(), cpu)).ifPresent(b -> out.put(p.getKey()
                            + " momentum", bits(b)));
                } else if (scene.optimizer() instanceof MuonAdamW hybrid) {
                    ifItsOwn(() -> hybrid.momentumBuffer(p.getKey(), cpu)).ifPresent(b -> out.put(p.getKey()
                            + " momentum", bits(b)));
                    ifItsOwn(() -> hybrid.adamWMoments(p.getKey(), cpu)).ifPresent(list -> {
                        for (int i = 0; i < list.size(); i++) {
                            out.put(p.getKey() + " moment " + i, bits(list.get(i)));
                        }
                    });
                }
            });
        }
        for (int i = 0; i < scene.extra().size(); i++) {
            out.put("handed over " + i, bits(scene.extra().get(i)));
        }
        if (scene.optimizer() instanceof Muon muon) {
            out.put("steps", muon.stepCount() + " applied, " + muon.skippedSteps() + " skipped");
        } else if (scene.optimizer() instanceof MuonAdamW hybrid) {
            out.put("steps", hybrid.stepCount() + " applied, " + hybrid.skippedSteps() + " skipped");
        }
        return out;
    }

    private static String bits(NDArray a) {
        return a.getDataType() + " " + a.getShape() + " " + Base64.getEncoder().encodeToString(a.toByteArray());
    }
}
