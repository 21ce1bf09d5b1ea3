package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NativeKernels;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The native momentum and update stages ({@link NativeFusedUpdateKernels}) give libtorch's bits: each stage against the
 * libtorch ops {@link MomentumStage} and {@link ApplyStage} run, for every variant this CPU runs, both update dtypes,
 * both lerp branches (weights below and from 0.5), sizes that end inside a vector and that split over threads, and
 * values that reach subnormals, signed zeros and overflow. Declined calls write nothing.
 */
@ExtendWith(NativeScopePerTest.class)
class NativeFusedUpdateKernelsTest {
    /** Empty, ending inside a vector (1, 15, 17, 1 001), and above the one-thread limit of 65 536 entries per thread.
     * */
    private static final long[] SIZES = {0, 1, 15, 16, 17, 1_001, 140_001};
    private static final double[] SPECIAL = {0.0, -0.0, 1e-40, -3e-39, 1.4e-45, 3e38, -3e38, 1e-30, 65504, -1};

    /**
     * The variants this process can call: the selected one, and AVX2 where AVX-512 was selected (every CPU with
     * AVX512_BF16 runs AVX2 and FMA too); none where the native kernels are off, or where ATen runs its scalar
     * kernels, whose bits the stages do not reproduce ({@link NativeFusedUpdateKernels#ifAvailable()}).
     */
    static Stream<NativeKernels.Variant> runnableVariants() {
        return NativeKernels.variant().stream()
                .filter(v -> NativeFusedUpdateKernels.atenVectorized())
                .flatMap(v -> v == NativeKernels.Variant.AVX512
                        ? Stream.of(NativeKernels.Variant.AVX512, NativeKernels.Variant.AVX2) : Stream.of(v));
    }

    static Stream<Arguments> momentumCases() {
        List<Arguments> cases = new ArrayList<>();
        for (NativeKernels.Variant v : NativeKernels.Variant.values()) {
            for (double momentum : new double[]{0.95, 0.5, 0.3, 0.0}) {
                for (boolean nesterov : new boolean[]{true, false}) {
                    for (ScalarType out : new ScalarType[]{ScalarType.Float, ScalarType.BFloat16}) {
                        cases.add(Arguments.of(v, momentum, nesterov, out.name()));
                    }
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} momentum={1} nesterov={2} out={3}")
    @MethodSource("momentumCases")
    void momentumInto_givesLibtorchsBits(NativeKernels.Variant variant, double momentum, boolean nesterov,
                                        String outType) {
        assumeRunnable(variant);
        ScalarType out = ScalarType.valueOf(outType);
        MuonConfig config = MuonConfig.defaults().withMomentum(momentum).withNesterov(nesterov);
        for (long n : SIZES) {
            Tensor grad = data(n, 1);
            Tensor expectedBuffer = data(n, 2);
            Tensor buffer = expectedBuffer.clone();
            Tensor expectedU = libtorchMomentum(expectedBuffer, grad, config, out);

            Tensor u = torch.zeros(n).to(out);
            assertTrue(new NativeFusedUpdateKernels(variant).momentumInto(u, buffer, grad, momentum, nesterov));

            assertArrayEquals(values(expectedBuffer), values(buffer), "buffer, n=" + n);
            assertArrayEquals(values(expectedU), values(u), "U, n=" + n);
        }
    }

    static Stream<Arguments> updateCases() {
        List<Arguments> cases = new ArrayList<>();
        for (NativeKernels.Variant v : NativeKernels.Variant.values()) {
            for (double weightDecay : new double[]{0.0, 0.1}) {
                for (ScalarType o : new ScalarType[]{ScalarType.Float, ScalarType.BFloat16}) {
                    cases.add(Arguments.of(v, weightDecay, o.name()));
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} weightDecay={1} O={2}")
    @MethodSource("updateCases")
    void updateParameter_givesLibtorchsBits(NativeKernels.Variant variant, double weightDecay, String updateType) {
        assumeRunnable(variant);
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withWeightDecay(weightDecay);
        UpdateSlots.Step scalars = new UpdateSlots.Step(config);
        double alpha = -config.scaledLr(96, 32);
        for (long n : SIZES) {
            Tensor o = data(n, 3).to(ScalarType.valueOf(updateType));
            Tensor expected = data(n, 4);
            Tensor param = expected.clone();
            // The plain applier's two ops (UpdatePlan).
            if (weightDecay != 0) {
                expected.mul_(scalars.decay);
            }
            expected.add_(o, new Scalar(alpha));

            assertTrue(new NativeFusedUpdateKernels(variant).updateParameter(param, o, scalars.decayFactor, alpha));

            assertArrayEquals(values(expected), values(param), "n=" + n);
        }
    }

    @ParameterizedTest(name = "{0} weightDecay={1} O={2}")
    @MethodSource("updateCases")
    void updateParameter_ofATallParameter_readsItsTransposedUpdate_withLibtorchsBits(
            NativeKernels.Variant variant, double weightDecay, String updateType) {
        assumeRunnable(variant);
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withWeightDecay(weightDecay);
        UpdateSlots.Step scalars = new UpdateSlots.Step(config);
        double alpha = -config.scaledLr(300, 70);
        // Tall shapes whose sides end inside and on the 32-value blocks, and one above the one-thread limit.
        for (long[] shape : new long[][]{{3, 2}, {33, 31}, {64, 32}, {300, 70}, {1_024, 160}}) {
            long rows = shape[0];
            long cols = shape[1];
            Tensor o = data(rows * cols, 9).view(cols, rows).to(ScalarType.valueOf(updateType)).t();
            Tensor expected = data(rows * cols, 10).view(rows, cols);
            Tensor param = expected.clone();
            if (weightDecay != 0) {
                expected.mul_(scalars.decay);
            }
            expected.add_(o, new Scalar(alpha));

            assertTrue(new NativeFusedUpdateKernels(variant).updateParameter(param, o, scalars.decayFactor, alpha));

            assertArrayEquals(values(expected), values(param), rows + "x" + cols);
        }
    }

    /** What each declined call is given; the stage must return false and leave every tensor as it was. */
    static Stream<Arguments> declinedCalls() {
        return Stream.of(
                Arguments.of("double buffer", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0], t[1].to(ScalarType.Double), t[2]}),
                Arguments.of("bfloat16 gradient", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0], t[1], t[2].to(ScalarType.BFloat16)}),
                Arguments.of("double out", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0].to(ScalarType.Double), t[1], t[2]}),
                Arguments.of("transposed out", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{torch.zeros(10, 12).t(), t[1], t[2]}),
                Arguments.of("shorter gradient", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0], t[1], t[2].narrow(0, 0, 119)}),
                Arguments.of("out is the buffer", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[1], t[1], t[2]}),
                Arguments.of("out overlaps the gradient", (Function<Tensor[], Tensor[]>) t -> {
                    Tensor both = torch.zeros(240);
                    both.narrow(0, 100, 120).copy_(t[2]);
                    return new Tensor[]{both.narrow(0, 0, 120), t[1], both.narrow(0, 100, 120)};
                }));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("declinedCalls")
    void momentumInto_declinesWhatItDoesNotServe_andWritesNothing(String what, Function<Tensor[], Tensor[]> make) {
        NativeKernels.Variant variant = NativeKernels.variant().orElse(null);
        assumeTrue(variant != null, "native kernels off");
        Tensor[] t = make.apply(new Tensor[]{torch.zeros(120), data(120, 5), data(120, 6)});
        double[][] before = {values(t[0]), values(t[1]), values(t[2])};

        assertFalse(new NativeFusedUpdateKernels(variant).momentumInto(t[0], t[1], t[2], 0.95, true), what);

        for (int i = 0; i < 3; i++) {
            assertArrayEquals(before[i], values(t[i]), what + ": tensor " + i + " changed");
        }
    }

    static Stream<Arguments> declinedUpdates() {
        return Stream.of(
                Arguments.of("double parameter", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0].to(ScalarType.Double), t[1]}),
                Arguments.of("float16 update", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0], t[1].to(ScalarType.Half)}),
                Arguments.of("strided update", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0], torch.zeros(120, 2).select(1, 0)}),
                Arguments.of("transposed update of another shape", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0].view(12, 10), t[1].view(12, 10).t()}),
                Arguments.of("strided parameter", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{torch.zeros(120, 2).select(1, 0), t[1]}),
                Arguments.of("update is the parameter", (Function<Tensor[], Tensor[]>) t ->
                        new Tensor[]{t[0], t[0]}));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("declinedUpdates")
    void updateParameter_declinesWhatItDoesNotServe_andWritesNothing(String what, Function<Tensor[], Tensor[]> make) {
        NativeKernels.Variant variant = NativeKernels.variant().orElse(null);
        assumeTrue(variant != null, "native kernels off");
        Tensor[] t = make.apply(new Tensor[]{data(120, 7), data(120, 8)});
        double[][] before = {values(t[0]), values(t[1])};

        assertFalse(new NativeFusedUpdateKernels(variant).updateParameter(t[0], t[1], 0.998, -0.01), what);

        assertArrayEquals(before[0], values(t[0]), what + ": parameter changed");
        assertArrayEquals(before[1], values(t[1]), what + ": update changed");
    }

    @Test
    void selection_servesCpuFloat32NewtonSchulzParameters_only() {
        FusedKernelSelection selection = new FusedKernelSelection();
        MuonConfig ns = MuonConfig.defaults();
        Tensor float32 = torch.zeros(8, 4);
        if (NativeKernels.isAvailable() && NativeFusedUpdateKernels.atenVectorized()) {
            assertInstanceOf(NativeFusedUpdateKernels.class, selection.forParameter(ns, float32, "w"));
            assertInstanceOf(NativeFusedUpdateKernels.class, selection.forParameter(
                    ns.withNsPrecision(dev.muon.orthogonalize.NsPrecision.FLOAT32), float32, "w"));
        } else {
            assertNull(selection.forParameter(ns, float32, "w"), "native kernels or ATen's vector kernels off");
        }
        assertNull(selection.forParameter(ns, torch.zeros(8, 4).to(ScalarType.Double), "w"), "float64");
        assertNull(selection.forParameter(ns.withOrthogonalization(Orthogonalization.EXACT_SVD), float32, "w"),
                "exact SVD");
    }

    @Test
    void selection_withTheDisableProperty_keepsLibtorchsOps() {
        String key = FusedKernelSelection.DISABLE_NATIVE_STAGES_PROPERTY;
        String before = System.getProperty(key);
        System.setProperty(key, "true");
        try {
            assertNull(new FusedKernelSelection().forParameter(MuonConfig.defaults(), torch.zeros(8, 4), "w"));
        } finally {
            if (before == null) {
                System.clearProperty(key);
            } else {
                System.setProperty(key, before);
            }
        }
    }

    private static void assumeRunnable(NativeKernels.Variant variant) {
        assumeTrue(runnableVariants().anyMatch(v -> v == variant), () -> variant + " kernels do not run here");
    }

    /** The plain momentum's libtorch ops (UpdatePlan) on {@code buffer} (advanced in place), U in {@code out}'s
     * dtype. */
    private static Tensor libtorchMomentum(Tensor buffer, Tensor grad, MuonConfig config, ScalarType out) {
        UpdateSlots.Step scalars = new UpdateSlots.Step(config);
        buffer.lerp_(grad, scalars.oneMinusMomentum);
        Tensor u = config.nesterov() ? torch.lerp(grad, buffer, scalars.momentum) : buffer.clone();
        return u.to(out);
    }

    /** The values as doubles (exact for float32 and bfloat16, so equal arrays are equal bits); none when empty. */
    private static double[] values(Tensor t) {
        return t.numel() == 0 ? new double[0] : Tensors.values(t);
    }

    /** n float32 values: mostly Gaussian at gradient scale, one in eight from {@link #SPECIAL}. */
    private static Tensor data(long n, long seed) {
        Random random = new Random(seed);
        double[] values = new double[(int) n];
        for (int i = 0; i < n; i++) {
            values[i] = random.nextInt(8) == 0 ? SPECIAL[random.nextInt(SPECIAL.length)]
                    : random.nextGaussian() * Math.pow(10, random.nextInt(6) - 4);
        }
        return Tensors.of(values, new long[]{n}, ScalarType.Float);
    }
}
