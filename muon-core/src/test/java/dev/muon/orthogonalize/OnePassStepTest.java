package dev.muon.orthogonalize;

import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.javacpp.ShortPointer;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one-pass bfloat16 step of the symmetric kernel ({@link NativeKernels#bfloat16SymmetricStep}, AVX-512 variant
 * only): the bits of its stated formula, recomputed here in Java in its order ({@code vdpbf16ps}'s two fused
 * multiply-adds per pair, odd half first, inputs and results flushed from subnormals; each product rounded once by
 * {@code vcvtneps2bf16}), for any thread count; the iteration on it within the golden bfloat16 tolerance and within
 * twice the plain bfloat16 kernel's error; where it is chosen; and its refusal on the AVX2 variant, whose CPUs keep
 * the half products with {@code B·X} on libtorch.
 */
@ExtendWith(NativeScopePerTest.class)
class OnePassStepTest {
    private static final float A = 3.4445f;
    private static final float B = -4.7750f;
    private static final float C = 2.0315f;

    @BeforeEach
    void seed() {
        torch.manual_seed(17);
    }

    static Stream<Arguments> stepShapes() {
        // Around the 8-row tiles and 32-row panels, the 16-pair transposes and permutes of the packs (odd sides: a
        // half-filled last pair), one row, wide and square, and several panels in both dimensions.
        int[][] shapes = {{1, 1}, {1, 7}, {3, 5}, {8, 8}, {9, 16}, {17, 33}, {31, 31}, {33, 64}, {40, 71},
                {64, 64}, {65, 100}, {100, 130}, {129, 129}, {257, 300}};
        return Stream.of(shapes).map(s -> Arguments.of(s[0], s[1]));
    }

    @ParameterizedTest(name = "{0}x{1}")
    @MethodSource("stepShapes")
    void step_givesItsFormulasBits(int m, int n) {
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        Tensor x = torch.randn(m, n).div(new Scalar(Math.sqrt(n))).to(ScalarType.BFloat16);
        assertArrayEquals(formula(bits(x), m, n, A, B, C), bits(step(x, 2)), m + "x" + n + ": the formula's bits");
    }

    @Test
    void step_flushesSubnormalProductsAndSums_asItsFormulaSays() {
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        // Entries near 2^-66: their products (2^-132) are float32 subnormals, which vdpbf16ps flushes to zero, so A
        // is zero and B = a·I; a sum that kept them would differ from the formula. And a few bfloat16 subnormals
        // (2^-130), which it reads as zero.
        int m = 20;
        int n = 24;
        Tensor x = torch.randn(m, n).mul(new Scalar(Math.pow(2, -66))).to(ScalarType.BFloat16);
        x.narrow(0, 0, 2).fill_(new Scalar(Math.pow(2, -130)));
        short[] expected = formula(bits(x), m, n, A, B, C);
        assertArrayEquals(expected, bits(step(x, 2)), "the formula's bits");
        // What the flush implies: B = bfloat16(a)·I, so X' = bfloat16(bfloat16(a)·x) (one exact product per
        // entry) for the normal rows, and the subnormal rows zero.
        short[] source = bits(x);
        float diagonal = exact(vcvtneps2bf16(A));
        for (int i = 0; i < m * n; i++) {
            float entry = i < 2 * n ? 0.0f : diagonal * value(source[i]);
            assertEquals(vcvtneps2bf16(entry), expected[i], "entry " + i + " of bfloat16(a)·x");
        }
    }

    @ParameterizedTest(name = "{0}x{1}")
    @MethodSource("threadShapes")
    void step_isTheSameBits_forAnyThreadCount(int m, int n) {
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        Tensor x = torch.randn(m, n).div(new Scalar(Math.sqrt(n))).to(ScalarType.BFloat16);
        short[] one = bits(step(x, 1));
        for (int threads = 2; threads <= 5; threads++) {
            assertArrayEquals(one, bits(step(x, threads)), m + "x" + n + " on " + threads + " threads");
        }
    }

    static Stream<Arguments> threadShapes() {
        // Fewer tiles than threads, and several panels.
        return Stream.of(Arguments.of(5, 9), Arguments.of(70, 70), Arguments.of(200, 333));
    }

    @Test
    void iterate_chainsTheSteps_withEachStepsCoefficients() {
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        int m = 48;
        int n = 80;
        // A schedule whose coefficients differ per step: a step that reused the first step's would fail.
        Coefficients[] schedule = {new Coefficients(3.4445, -4.7750, 2.0315), new Coefficients(2.0, -1.5, 0.5),
                new Coefficients(1.875, -1.25, 0.375)};
        NewtonSchulzConfig config = new NewtonSchulzConfig(CoefficientSchedule.perStep(List.of(schedule)), 3, 1e-7,
                NsPrecision.BFLOAT16, NsAlgorithm.SYMMETRIC);
        Workspace ws = new Workspace(0, m, n, ScalarType.BFloat16, new Device("cpu"));
        new NewtonSchulz(config).normalizeInto(ws.x, torch.randn(m, n));
        short[] expected = bits(ws.x);
        for (Coefficients c : schedule) {
            expected = formula(expected, m, n, (float) c.a(), (float) c.b(), (float) c.c());
        }
        SymmetricIteration onePass = new SymmetricIteration(ws, NativeKernels.Variant.AVX512, true,
                MatrixProducts.LIBTORCH);
        Scalar[][] abc = scalars(config);
        assertArrayEquals(expected, bits(onePass.iterate(3, abc[0], abc[1], abc[2])), "three steps");
    }

    static Stream<Arguments> goldenCases() {
        return GoldenReader.casesWith("ns_", true, false);
    }

    @ParameterizedTest(name = "{0}, one pass {1}")
    @MethodSource("goldenCases")
    void symmetricKernel_onePassOrNot_matchesGolden_atTheBfloat16Tolerance(GoldenCase c, boolean onePass) {
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        NewtonSchulzConfig config = GoldenConfigs.newtonSchulz(c, NsPrecision.BFLOAT16)
                .withNsAlgorithm(NsAlgorithm.SYMMETRIC);
        Tensor input = Tensors.of(c.tensor("input", null, 0), ScalarType.Float);
        boolean tall = input.size(0) > input.size(1);
        Tensor wide = tall ? input.t() : input;
        Workspace ws = new Workspace(0, wide.size(0), wide.size(1), ScalarType.BFloat16, input.device());
        new NewtonSchulz(config).normalizeInto(ws.x, wide);
        SymmetricIteration kernel = new SymmetricIteration(ws, NativeKernels.Variant.AVX512, onePass,
                MatrixProducts.LIBTORCH);
        Scalar[][] abc = scalars(config);
        Tensor out = kernel.iterate(config.nsSteps(), abc[0], abc[1], abc[2]);
        double error = Tensors.relativeError(tall ? out.t() : out, c.tensor("expected", null, 0).data());
        // golden/README.md: 0.25 relative for a bfloat16 iteration.
        assertTrue(error <= 0.25, c.name() + " one pass " + onePass + ": relative error " + error
                + " exceeds 0.25");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.muon.orthogonalize.NewtonSchulzPropertiesTest#spectra")
    void onePass_straysNoFurtherThanTwiceThePlainBf16Kernel(String spectrum) {
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        int m = 300;
        Tensor g = NewtonSchulzPropertiesTest.withSpectrum(spectrum, m, m);
        double[] exact = NewtonSchulzPropertiesTest.exactOrthogonalization(g);
        NewtonSchulzConfig bf16 = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16);
        Tensor input = g.to(ScalarType.Float);
        double plain = NewtonSchulzPropertiesTest.plainBf16Error(input, exact);
        Workspace ws = new Workspace(0, m, m, ScalarType.BFloat16, input.device());
        new NewtonSchulz(bf16).normalizeInto(ws.x, input);
        Scalar[][] abc = scalars(bf16);
        Tensor result = new SymmetricIteration(ws, NativeKernels.Variant.AVX512, true, MatrixProducts.LIBTORCH)
                .iterate(bf16.nsSteps(), abc[0], abc[1], abc[2]);
        double error = Tensors.relativeError(Tensors.values(result), exact);
        assertTrue(error <= 2 * plain, spectrum + ": one-pass error " + error + " exceeds twice the plain bfloat16 "
                + "kernel's " + plain);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.muon.orthogonalize.NativeVariants#all")
    void onePass_isChosenForTheAvx512VariantUpToItsBound_only(NativeKernels.Variant variant) {
        int max = NewtonSchulz.BFLOAT16_ONE_PASS_MAX_ROWS;
        long wide = GramProduct.NATIVE_MAX_ELEMENTS / 1024;
        boolean avx512 = variant == NativeKernels.Variant.AVX512;
        assertEquals(avx512, SymmetricIteration.onePassServes(variant, 1, 1), variant + " at 1 x 1");
        assertEquals(avx512, SymmetricIteration.onePassServes(variant, max, max), variant + " at " + max + "²");
        assertEquals(avx512, SymmetricIteration.onePassServes(variant, 1024, wide),
                variant + " at 1024 x " + wide + ", the half product's bound");
        assertFalse(SymmetricIteration.onePassServes(variant, max + 1, max + 1),
                variant + " at " + (max + 1) + "²");
        assertFalse(SymmetricIteration.onePassServes(variant, 1024, wide + 1),
                variant + " past the half product's bound");
        assertFalse(SymmetricIteration.onePassServes(null, 768, 768), "without native kernels");
    }

    @ParameterizedTest(name = "{0}x{1}")
    @MethodSource("chosenShapes")
    void shapeKernels_runTheOnePassStep_exactlyWhereTheRuleSays(int m, int n) {
        ShapeKernels kernels = new ShapeKernels(new Workspace(0, m, n, ScalarType.BFloat16, new Device("cpu")));
        boolean expected = SymmetricIteration.onePassServes(NativeKernels.variant().orElse(null), m, n);
        assertEquals(expected, kernels.symmetric().isOnePass(), m + "x" + n + " with native kernels "
                + NativeKernels.variant().map(Object::toString).orElse("off"));
        ShapeKernels float32 = new ShapeKernels(new Workspace(0, m, n, ScalarType.Float, new Device("cpu")));
        assertFalse(float32.symmetric().isOnePass(), "float32 never runs the bfloat16 step");
    }

    static Stream<Arguments> chosenShapes() {
        int max = NewtonSchulz.BFLOAT16_ONE_PASS_MAX_ROWS;
        return Stream.of(Arguments.of(64, 64), Arguments.of(768, 768), Arguments.of(max, max),
                Arguments.of(max + 1, max + 1), Arguments.of(600, 1100), Arguments.of(512, 16385));
    }

    static Stream<Arguments> refusals() {
        return Stream.of(
                Arguments.of(NativeKernels.Variant.AVX2, ScalarType.BFloat16, "the one-pass bfloat16 step needs the "
                        + "avx512 native kernels and a 2-D bfloat16 CPU workspace, got kernels avx2 and a 2-D "
                        + "BFloat16 workspace"),
                Arguments.of(null, ScalarType.BFloat16, "the one-pass bfloat16 step needs the avx512 native kernels "
                        + "and a 2-D bfloat16 CPU workspace, got kernels null and a 2-D BFloat16 workspace"),
                Arguments.of(NativeKernels.Variant.AVX512, ScalarType.Float, "the one-pass bfloat16 step needs the "
                        + "avx512 native kernels and a 2-D bfloat16 CPU workspace, got kernels avx512 and a 2-D "
                        + "Float workspace"));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("refusals")
    void onePass_isRefused_withoutTheAvx512VariantOrForAnotherDtype(NativeKernels.Variant variant, ScalarType dtype,
                                                                    String message) {
        // Refused before any native call: runs on any machine.
        Workspace ws = new Workspace(0, 8, 8, dtype, new Device("cpu"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SymmetricIteration(ws, variant, true, MatrixProducts.LIBTORCH));
        assertEquals(message, e.getMessage());
    }

    @Test
    void onePass_ofAnEmptyMatrix_isEmpty() {
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        for (int[] shape : new int[][]{{0, 5}, {0, 0}}) {
            Workspace ws = new Workspace(0, shape[0], shape[1], ScalarType.BFloat16, new Device("cpu"));
            Scalar[][] abc = scalars(NewtonSchulzConfig.defaults());
            Tensor out = new SymmetricIteration(ws, NativeKernels.Variant.AVX512, true, MatrixProducts.LIBTORCH)
                    .iterate(5, abc[0], abc[1], abc[2]);
            assertEquals(0, out.numel());
        }
    }

    /** One native step of {@code x} on {@code threads} threads, into poisoned buffers. */
    private static Tensor step(Tensor x, int threads) {
        int m = Math.toIntExact(x.size(0));
        int n = Math.toIntExact(x.size(1));
        // NaN, as a reused workspace holds: every entry of out must be written, and A's and B's unwritten blocks
        // must not be read.
        Tensor nan = torch.full(new long[]{m, m}, new Scalar(Double.NaN)).to(ScalarType.BFloat16);
        Tensor a = nan.clone();
        Tensor b = nan.clone();
        Tensor out = torch.full(new long[]{m, n}, new Scalar(Double.NaN)).to(ScalarType.BFloat16);
        Tensor scratch = torch.full(new long[]{NativeKernels.bfloat16SymmetricStepBytes(m, n)}, new Scalar(0xFF),
                new TensorOptions(ScalarType.Byte));
        NativeKernels.bfloat16SymmetricStep(x.data_ptr().address(), m, n, a.data_ptr().address(),
                b.data_ptr().address(), out.data_ptr().address(), scratch.data_ptr().address(), threads, A, B, C);
        return out;
    }

    /**
     * The step's formula in Java, in the kernel's order: {@code A = r(x·xᵀ)}, {@code B = r(c·(A·Aᵀ) + b·A [+ a])},
     * {@code X' = r(B·x)}, each product's entries summed by {@link #dot} and {@code r} being {@link #vcvtneps2bf16}.
     */
    static short[] formula(short[] x, int m, int n, float a, float b, float c) {
        return formula(x, m, n, a, b, c, true);
    }

    /** {@link #formula}, with each pair's odd element first ({@code vdpbf16ps}'s order) or the even one. */
    static short[] formula(short[] x, int m, int n, float a, float b, float c, boolean oddFirst) {
        short[] gram = new short[m * m];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < m; j++) {
                gram[i * m + j] = vcvtneps2bf16(dot(x, i * n, 1, x, j * n, 1, n, oddFirst));
            }
        }
        short[] poly = new short[m * m];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < m; j++) {
                // fma(p, c, s·b), then + a on the diagonal: the kernel's epilogue; s read as stored (no flush).
                float v = Math.fma(dot(gram, i * m, 1, gram, j * m, 1, m, oddFirst), c, exact(gram[i * m + j]) * b);
                if (i == j) {
                    v = v + a;
                }
                poly[i * m + j] = vcvtneps2bf16(v);
            }
        }
        short[] out = new short[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                out[i * n + j] = vcvtneps2bf16(dot(poly, i * m, 1, x, j, n, m, oddFirst));
            }
        }
        return out;
    }

    /**
     * {@code Σ_k u[k]·v[k]} over {@code k} terms as {@code vdpbf16ps} sums it ({@code oddFirst}): pair by pair,
     * for pair {@code q} first the product of the odd elements {@code 2q + 1} (zero past {@code k}), then of the
     * even ones, each added by a float32 fused multiply-add, subnormal inputs read as zero and subnormal results
     * flushed to zero.
     */
    static float dot(short[] u, int uFrom, int uStride, short[] v, int vFrom, int vStride, int k, boolean oddFirst) {
        float acc = 0.0f;
        for (int q = 0; q < (k + 1) / 2; q++) {
            int odd = 2 * q + 1;
            float uo = odd < k ? value(u[uFrom + odd * uStride]) : 0.0f;
            float vo = odd < k ? value(v[vFrom + odd * vStride]) : 0.0f;
            float ue = value(u[uFrom + 2 * q * uStride]);
            float ve = value(v[vFrom + 2 * q * vStride]);
            if (oddFirst) {
                acc = flush(Math.fma(uo, vo, acc));
                acc = flush(Math.fma(ue, ve, acc));
            } else {
                acc = flush(Math.fma(ue, ve, acc));
                acc = flush(Math.fma(uo, vo, acc));
            }
        }
        return acc;
    }

    /** {@code vcvtneps2bf16}: to nearest even; a subnormal input to zero of its sign; NaN to a quiet NaN. */
    static short vcvtneps2bf16(float f) {
        int u = Float.floatToRawIntBits(f);
        if ((u & 0x7FFFFFFF) > 0x7F800000) {
            return (short) ((u >>> 16) | 0x0040);
        }
        if ((u & 0x7F800000) == 0) {
            return (short) ((u >>> 16) & 0x8000);
        }
        return (short) ((u + 0x7FFF + ((u >>> 16) & 1)) >>> 16);
    }

    /** A bfloat16's value as vdpbf16ps reads it: subnormals as zero of their sign. */
    private static float value(short bits) {
        return flush(exact(bits));
    }

    private static float exact(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    private static float flush(float f) {
        return Math.abs(f) < Float.MIN_NORMAL ? Math.copySign(0.0f, f) : f;
    }

    /** A contiguous bfloat16 tensor's raw values. */
    static short[] bits(Tensor t) {
        Tensor c = t.contiguous();
        short[] out = new short[(int) c.numel()];
        if (out.length > 0) {
            new ShortPointer(c.data_ptr()).capacity(out.length).get(out);
        }
        return out;
    }

    private static Scalar[][] scalars(NewtonSchulzConfig config) {
        return NewtonSchulzPropertiesTest.coefficientScalars(config, config.nsSteps());
    }

    @Test
    void formula_ofTheOtherOrder_isNotTheKernels() {
        // The bit test can fail: here the order of a pair's two products decides an entry. In x·xᵀ[0][1] the pairs
        // give (even 1, odd 0), then (even -1, odd 2^-24): odd first, 1 + 2^-24 rounds to 1 and the -1 leaves 0;
        // even first, 1 - 1 = 0 and 2^-24 stays. A[0][1] then carries into B[0][1] and, through x[1][4] = 1 with
        // x[0][4] = 0, into X'[0][4].
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        double tiny = Math.pow(2, -12);
        Tensor x = torch.tensor(new float[]{1, 0, -1, (float) tiny, 0, 0, 1, 0, 1, (float) tiny, 1, 0})
                .reshape(2, 6).to(ScalarType.BFloat16);
        short[] kernel = bits(step(x, 2));
        assertArrayEquals(formula(bits(x), 2, 6, A, B, C, true), kernel, "odd first");
        short[] evenFirst = formula(bits(x), 2, 6, A, B, C, false);
        assertFalse(java.util.Arrays.equals(kernel, evenFirst), "a formula summing even before odd gave the "
                + "kernel's bits");
        assertEquals(0, kernel[4], "X'[0][4] odd first: A[0][1] = 0");
    }
}
