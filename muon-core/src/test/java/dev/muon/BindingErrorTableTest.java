package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Refusals;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bad input to muon-core's two optimizers, side by side: one row per bad input and binding, in the categories
 * muon-djl's {@code DjlErrorTableTest} has too (a parameter's dtype, its shape on Muon, a non-finite gradient, a
 * gradient unlike its parameter, a refused setting). Each row asserts the exception's type, a one-line message that
 * names the parameter (where there is one), the rule and the value, and that the refused call changed nothing: the
 * parameters' and gradients' bits, the optimizer's state and its step count.
 *
 * <p>Not refusals, so not rows: {@link Muon} has no {@link NonFinitePolicy} and uses a NaN or Inf gradient as it is
 * (docs/api.md, PyTorch's behaviour), and neither optimizer checks parameter values, only gradients; the two tests
 * at the end keep those promises.
 */
@ExtendWith(NativeScopePerTest.class)
class BindingErrorTableTest {
    /** A bad call and what it must leave as it was. */
    private record Scene(Executable call, Supplier<Map<String, Tensor>> snapshot, LongSupplier steps) {
    }

    private static Arguments row(String category, String binding, String what, Supplier<Scene> scene,
                                 Class<? extends RuntimeException> type, String message,
                                 String parameter) {
        return Arguments.of(category + " | " + binding + " | " + what, scene, type, message, parameter);
    }

    private static final String HOST_MEMORY_ON_CPU = ", where its state is in host memory already: use "
            + "StateStorage.withParameter(), or StateStorage.files(directory) to keep it out of memory";

    static Stream<Arguments> badInputs() {
        return Stream.of(
                // A parameter of a dtype Muon cannot take.
                row("dtype", "Muon", "an integer parameter",
                        () -> muonBuild(List.of(torch.ones(3, 3).to(ScalarType.Long)), MuonConfig.defaults()),
                        IllegalArgumentException.class,
                        "Muon only supports floating-point parameters; parameter 0 of group 0 has dtype Long",
                        "parameter 0 of group 0"),
                row("dtype", "MuonAdamW", "an integer parameter (it cannot require grad) forced to Muon",
                        () -> hybridBuild("idx.weight", torch.ones(3, 3).to(ScalarType.Long),
                                b -> b.forceMuon("idx.weight")),
                        IllegalArgumentException.class,
                        "forceMuon names 'idx.weight', which does not require grad and is left out", "'idx.weight'"),
                row("dtype", "Muon", "a complex parameter",
                        () -> muonBuild(List.of(torch.ones(3, 3).to(ScalarType.ComplexFloat)), MuonConfig.defaults()),
                        IllegalArgumentException.class,
                        "Muon does not support complex parameters; parameter 0 of group 0 has dtype ComplexFloat",
                        "parameter 0 of group 0"),
                row("dtype", "MuonAdamW", "a complex matrix, which the rule sends to Muon",
                        () -> hybridBuild("fc2.weight", torch.ones(3, 4).to(ScalarType.ComplexFloat)
                                .requires_grad_(true), b -> b),
                        IllegalArgumentException.class,
                        "Muon does not support complex parameters; parameter 'fc2.weight' has dtype ComplexFloat "
                                + "(sent to Muon by the default rule as a hidden matrix; forceAdamW(\"fc2.weight\") "
                                + "keeps it on AdamW)",
                        "'fc2.weight'"),

                // A parameter of a shape Muon cannot take.
                row("shape", "Muon", "a 1-D parameter",
                        () -> muonBuild(List.of(torch.randn(3, 4), torch.randn(64)), MuonConfig.defaults()),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 1 of group 0 has shape [64]",
                        "parameter 1 of group 0"),
                row("shape", "MuonAdamW", "a 1-D parameter forced to Muon",
                        () -> hybridBuild("fc2.bias", torch.randn(64).requires_grad_(true),
                                b -> b.forceMuon("fc2.bias")),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 'fc2.bias' has shape [64] (sent to Muon by "
                                + "forceMuon)", "'fc2.bias'"),
                row("shape", "Muon", "a 0-dim parameter",
                        () -> muonBuild(List.of(torch.randn(new long[0])), MuonConfig.defaults()),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 0 of group 0 has shape []",
                        "parameter 0 of group 0"),
                row("shape", "MuonAdamW", "a 0-dim parameter forced to Muon",
                        () -> hybridBuild("scale", torch.randn(new long[0]).requires_grad_(true),
                                b -> b.forceMuon("scale")),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 'scale' has shape [] (sent to Muon by "
                                + "forceMuon)", "'scale'"),
                row("shape", "Muon", "a 5-D parameter",
                        () -> muonBuild(List.of(torch.randn(2, 2, 2, 2, 2)), MuonConfig.defaults()),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 0 of group 0 has shape [2, 2, 2, 2, 2]",
                        "parameter 0 of group 0"),
                row("shape", "MuonAdamW", "a 5-D parameter forced to Muon",
                        () -> hybridBuild("blob", torch.randn(2, 2, 2, 2, 2).requires_grad_(true),
                                b -> b.forceMuon("blob")),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 'blob' has shape [2, 2, 2, 2, 2] (sent to "
                                + "Muon by forceMuon)", "'blob'"),
                row("shape", "Muon", "a 3-D parameter with stackedWeights REJECT",
                        () -> muonBuild(List.of(torch.randn(4, 6, 5)),
                                MuonConfig.defaults().withStackedWeights(StackedWeights.REJECT)),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 0 of group 0 has shape [4, 6, 5]. "
                                + "To treat a 3-D parameter as a batch of 4 matrices, use "
                                + "MuonConfig.withStackedWeights(StackedWeights.BATCH)", "parameter 0 of group 0"),
                row("shape", "MuonAdamW", "a 3-D parameter forced to Muon with stackedWeights REJECT",
                        () -> hybridBuild("experts.weight", torch.randn(4, 6, 5).requires_grad_(true),
                                b -> b.forceMuon("experts.weight")
                                        .muon(MuonConfig.defaults().withStackedWeights(StackedWeights.REJECT))),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 'experts.weight' has shape [4, 6, 5]. "
                                + "To treat a 3-D parameter as a batch of 4 matrices, use "
                                + "MuonConfig.withStackedWeights(StackedWeights.BATCH) (sent to Muon by forceMuon)",
                        "'experts.weight'"),
                row("shape", "Muon", "a 4-D parameter with convWeights REJECT",
                        () -> muonBuild(List.of(torch.randn(8, 3, 3, 3)),
                                MuonConfig.defaults().withConvWeights(ConvWeights.REJECT)),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 0 of group 0 has shape [8, 3, 3, 3]. "
                                + "To flatten a 4-D conv filter to [8, 27], use "
                                + "MuonConfig.withConvWeights(ConvWeights.FLATTEN)", "parameter 0 of group 0"),
                row("shape", "MuonAdamW", "a 4-D parameter with convWeights REJECT",
                        () -> hybridBuild("conv.weight", torch.randn(8, 3, 3, 3).requires_grad_(true),
                                b -> b.muon(MuonConfig.defaults().withConvWeights(ConvWeights.REJECT))),
                        IllegalArgumentException.class,
                        "Muon only supports 2-D parameters; parameter 'conv.weight' has shape [8, 3, 3, 3]. "
                                + "To flatten a 4-D conv filter to [8, 27], use "
                                + "MuonConfig.withConvWeights(ConvWeights.FLATTEN) (sent to Muon by the default rule "
                                + "as a hidden matrix; forceAdamW(\"conv.weight\") keeps it on AdamW)",
                        "'conv.weight'"),

                // A gradient holding NaN or Inf: refused under RAISE (Muon has no policy: see the class comment).
                row("non-finite", "MuonAdamW", "a NaN gradient on a Muon parameter under RAISE",
                        () -> hybridStep(NonFinitePolicy.RAISE, named -> poison(named, "fc1.weight", Double.NaN)),
                        IllegalStateException.class,
                        "the gradient of parameter 'fc1.weight' holds NaN or Inf (nonFinitePolicy RAISE); nothing "
                                + "was changed", "'fc1.weight'"),
                row("non-finite", "MuonAdamW", "an Inf gradient on an AdamW parameter under RAISE",
                        () -> hybridStep(NonFinitePolicy.RAISE,
                                named -> poison(named, "fc1.bias", Double.POSITIVE_INFINITY)),
                        IllegalStateException.class,
                        "the gradient of parameter 'fc1.bias' holds NaN or Inf (nonFinitePolicy RAISE); nothing "
                                + "was changed", "'fc1.bias'"),

                // A gradient unlike its parameter.
                row("gradient", "Muon", "a gradient of another shape",
                        () -> muonStep(params -> params.get(1).mutable_grad().put(torch.randn(7, 5))),
                        IllegalStateException.class,
                        "the gradient of parameter 1 of group 0 has shape [7, 5] but the parameter has shape [5, 7]",
                        "parameter 1 of group 0"),
                row("gradient", "MuonAdamW", "a gradient of another shape on a Muon parameter",
                        () -> hybridStep(NonFinitePolicy.SKIP,
                                named -> named.get("fc1.weight").mutable_grad().put(torch.randn(4, 5))),
                        IllegalStateException.class,
                        "the gradient of parameter 'fc1.weight' has shape [4, 5] but the parameter has shape [5, 4]",
                        "'fc1.weight'"),
                row("gradient", "MuonAdamW", "a gradient of another shape on an AdamW parameter",
                        () -> hybridStep(NonFinitePolicy.SKIP,
                                named -> named.get("fc1.bias").mutable_grad().put(torch.randn(5, 1))),
                        IllegalStateException.class,
                        "the gradient of parameter 'fc1.bias' has shape [5, 1] but the parameter has shape [5]",
                        "'fc1.bias'"),
                row("gradient", "Muon", "a gradient of another dtype",
                        () -> muonStep(params -> params.get(0).mutable_grad().put(torch.randn(6, 4)
                                .to(ScalarType.Double))),
                        IllegalStateException.class,
                        "the gradient of parameter 0 of group 0 has dtype Double but the parameter has dtype Float; "
                                + "a gradient must have its parameter's dtype", "parameter 0 of group 0"),
                row("gradient", "MuonAdamW", "a gradient of another dtype",
                        () -> hybridStep(NonFinitePolicy.SKIP, named -> named.get("fc1.weight").mutable_grad()
                                .put(torch.randn(5, 4).to(ScalarType.Double))),
                        IllegalStateException.class,
                        "the gradient of parameter 'fc1.weight' has dtype Double but the parameter has dtype Float; "
                                + "a gradient must have its parameter's dtype", "'fc1.weight'"),

                // A setting the binding refuses.
                row("setting", "Muon", "the state in host memory for a CPU parameter",
                        () -> muonBuild(List.of(torch.randn(6, 4)), b -> b.stateStorage(StateStorage.hostMemory())),
                        IllegalArgumentException.class,
                        "stateStorage HOST_MEMORY keeps the state of accelerator parameters in host memory; "
                                + "parameter 0 of group 0 (group 0) is on cpu" + HOST_MEMORY_ON_CPU,
                        "parameter 0 of group 0"),
                row("setting", "MuonAdamW", "the Muon state in host memory for a CPU parameter",
                        () -> hybridBuild("fc2.weight", torch.randn(3, 4).requires_grad_(true),
                                b -> b.muonStateStorage(StateStorage.hostMemory())),
                        IllegalArgumentException.class,
                        "stateStorage HOST_MEMORY keeps the state of accelerator parameters in host memory; "
                                + "parameter 'fc1.weight' (group 0) is on cpu" + HOST_MEMORY_ON_CPU, "'fc1.weight'"),
                row("setting", "Muon", "a momentum of 1",
                        () -> muonBuild(List.of(torch.randn(6, 4)), b -> b.addGroup(List.of(torch.randn(2, 2)),
                                MuonConfig.defaults().withMomentum(1.0))),
                        IllegalArgumentException.class, "momentum must be < 1, got 1.0", null),
                row("setting", "MuonAdamW", "an AdamW beta1 of 1",
                        () -> hybridBuild("fc2.weight", torch.randn(3, 4).requires_grad_(true),
                                b -> b.adamW(AdamWConfig.defaults().withBetas(1.0, 0.999))),
                        IllegalArgumentException.class, "beta1 must be in [0, 1), got 1.0", null));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badInputs")
    void badInput_isRefusedInOneLineNamingIt_andChangesNothing(String label, Supplier<Scene> setUp,
                                                                Class<? extends RuntimeException> type,
                                                                String message, String parameter) {
        Scene scene = setUp.get();
        Map<String, Tensor> before = scene.snapshot().get();
        long steps = scene.steps().getAsLong();

        RuntimeException e = assertThrows(type, scene.call(), label);

        Refusals.assertOneLineNaming(e, message, parameter);
        assertEquals(steps, scene.steps().getAsLong(), "the step count");
        assertSameBits(before, scene.snapshot().get());
    }

    /** Muon takes a NaN or Inf gradient as it is, as PyTorch's Muon does: it has no {@link NonFinitePolicy}. */
    @Test
    void muon_nonFiniteGradient_isUsedAsItIs() {
        List<Tensor> params = List.of(torch.randn(6, 4), torch.randn(5, 7));
        Muon muon = Muon.of(params, MuonConfig.defaults());
        params.get(0).mutable_grad().put(torch.randn(6, 4));
        params.get(1).mutable_grad().put(torch.full(new long[] {5, 7}, new Scalar(Double.NaN)));
        muon.step();
        assertEquals(1, muon.stepCount());
        assertFalse(params.get(1).isfinite().all().item_bool(), "the NaN reached the parameter");
        assertTrue(params.get(0).isfinite().all().item_bool(), "the other parameter is not touched by it");
    }

    /**
     * Parameter values are not checked, by either optimizer: a NaN parameter with finite gradients is no refusal,
     * and under SKIP no reason to skip ({@link NonFinitePolicy} looks at gradients). The step runs, the NaN stays
     * in its parameter, and the others update as they would.
     */
    @Test
    void nanParameter_isNotChecked_theStepRuns_andTheOthersUpdate() {
        List<Tensor> params = List.of(torch.randn(6, 4), torch.randn(5, 7));
        params.get(1).view(-1).narrow(0, 3, 1).fill_(new Scalar(Double.NaN));
        Muon muon = Muon.of(params, MuonConfig.defaults());
        Tensor before = params.get(0).clone();
        params.forEach(p -> p.mutable_grad().put(torch.randn(p.shape())));
        muon.step();
        assertEquals(1, muon.stepCount());
        assertFalse(before.equal(params.get(0)), "the finite parameter moved");
        assertTrue(params.get(0).isfinite().all().item_bool());

        Map<String, Tensor> named = new LinkedHashMap<>();
        MuonAdamW opt = NonFinitePolicyTest.trainedOnce(named, NonFinitePolicy.SKIP);
        named.get("fc1.weight").detach().view(-1).narrow(0, 3, 1).fill_(new Scalar(Double.NaN));
        Tensor embed = named.get("embed.weight").detach().clone();
        opt.step();
        assertFalse(opt.lastStep().skipped());
        assertEquals(2, opt.stepCount());
        assertFalse(embed.equal(named.get("embed.weight")), "the others moved");
        assertTrue(named.get("embed.weight").isfinite().all().item_bool());
    }

    // ---- scenes ----

    /** Builds Muon over {@code params}; nothing is built before the call. */
    private static Scene muonBuild(List<Tensor> params, MuonConfig config) {
        return new Scene(() -> Muon.of(params, config), () -> copies(params), () -> 0);
    }

    private static Scene muonBuild(List<Tensor> params, java.util.function.UnaryOperator<Muon.Builder> settings) {
        return new Scene(() -> settings.apply(Muon.builder().addGroup(params, MuonConfig.defaults())).build(),
                () -> copies(params), () -> 0);
    }

    /** Builds MuonAdamW over a small model and one more parameter; nothing is built before the call. */
    private static Scene hybridBuild(String name, Tensor extra,
                                     java.util.function.UnaryOperator<MuonAdamW.Builder> settings) {
        Map<String, Tensor> named = MuonAdamWErrorsTest.small();
        named.put(name, extra);
        return new Scene(() -> settings.apply(MuonAdamW.builder(named)).build(),
                () -> copies(new ArrayList<>(named.values())), () -> 0);
    }

    /** Muon over [6, 4] and [5, 7] after one good step, the next gradients set, then {@code spoil}; a step. */
    private static Scene muonStep(java.util.function.Consumer<List<Tensor>> spoil) {
        List<Tensor> params = List.of(torch.randn(6, 4), torch.randn(5, 7));
        Muon muon = Muon.of(params, MuonConfig.defaults().withLr(0.02));
        params.forEach(p -> p.mutable_grad().put(torch.randn(p.shape())));
        muon.step();
        params.forEach(p -> p.mutable_grad().put(torch.randn(p.shape())));
        spoil.accept(params);
        return new Scene(muon::step, () -> {
            Map<String, Tensor> all = copies(params);
            for (int i = 0; i < params.size(); i++) {
                int at = i;
                muon.momentumBuffer(params.get(i)).ifPresent(b -> all.put("momentum " + at, b.clone()));
            }
            return all;
        }, muon::stepCount);
    }

    /** MuonAdamW over the small model after one good step, the next gradients set, then {@code spoil}; a step. */
    private static Scene hybridStep(NonFinitePolicy policy, java.util.function.Consumer<Map<String, Tensor>> spoil) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        MuonAdamW opt = NonFinitePolicyTest.trainedOnce(named, policy);
        spoil.accept(named);
        return new Scene(opt::step, () -> {
            Map<String, Tensor> all = CheckpointTest.stateOf(opt);
            all.putAll(copies(new ArrayList<>(named.values())));
            return all;
        }, opt::stepCount);
    }

    private static void poison(Map<String, Tensor> named, String name, double value) {
        NonFinitePolicyTest.poison(named, name, value);
    }

    /** Copies of every tensor and its gradient. */
    private static Map<String, Tensor> copies(List<Tensor> tensors) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (int i = 0; i < tensors.size(); i++) {
            Tensor t = tensors.get(i);
            out.put("tensor " + i, t.detach().clone());
            if (t.grad().defined()) {
                out.put("gradient " + i, t.grad().clone());
            }
        }
        return out;
    }

    /** Same keys, and every tensor of the same dtype, shape and bits (NaN included). */
    private static void assertSameBits(Map<String, Tensor> expected, Map<String, Tensor> actual) {
        assertEquals(expected.keySet(), actual.keySet(), "the state's entries");
        for (String key : expected.keySet()) {
            Tensor a = expected.get(key);
            Tensor b = actual.get(key);
            assertEquals(a.scalar_type().value, b.scalar_type().value, key + " dtype");
            assertEquals(Arrays.toString(a.shape()), Arrays.toString(b.shape()), key + " shape");
            assertTrue(bits(a).equal(bits(b)), key + " changed");
        }
    }

    /** The tensor's bits as integers of its element size (complex as two floats). */
    private static Tensor bits(Tensor t) {
        Tensor c = t.contiguous();
        if (c.is_complex()) {
            c = torch.view_as_real(c).contiguous();
        }
        return switch ((int) c.element_size()) {
            case 8 -> c.view(ScalarType.Long);
            case 4 -> c.view(ScalarType.Int);
            case 2 -> c.view(ScalarType.Short);
            default -> c.view(ScalarType.Byte);
        };
    }
}
