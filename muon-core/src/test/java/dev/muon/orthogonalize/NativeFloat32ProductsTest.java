package dev.muon.orthogonalize;

import dev.muon.golden.NativeScopePerTest;
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

import java.util.function.Consumer;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The native float32 products ({@link NativeFloat32Products}), in each variant, against float64, entry by entry,
 * with the bound that a float32 sum allows; exact symmetry; the same bits for any thread count and in both variants;
 * and the symmetric and Gram kernels on them against the same kernels on OpenBLAS. Skips, with the reason, the
 * variants this machine cannot run.
 */
@ExtendWith(NativeScopePerTest.class)
class NativeFloat32ProductsTest {
    /** float32's unit roundoff; k of them bound a k-term float32 sum, relative to the sum of magnitudes. */
    private static final double FLOAT32_ROUNDOFF = Math.pow(2, -24);

    @BeforeEach
    void seed() {
        torch.manual_seed(13);
    }

    /** Each variant with each of the given rows. */
    private static Stream<Arguments> perVariant(Stream<Arguments> rows) {
        java.util.List<Arguments> list = rows.toList();
        return NativeVariants.all().flatMap(v -> list.stream().map(a -> {
            Object[] args = new Object[a.get().length + 1];
            args[0] = v;
            System.arraycopy(a.get(), 0, args, 1, a.get().length);
            return Arguments.of(args);
        }));
    }

    private static Stream<Arguments> perVariant(int... sides) {
        return perVariant(IntStream.of(sides).mapToObj(Arguments::of));
    }

    /** NaN, as a reused workspace may hold: every entry must be overwritten. */
    private static Tensor poisoned(long rows, long cols) {
        return torch.full(new long[]{rows, cols}, new Scalar(Double.NaN)).to(ScalarType.Float);
    }

    private static Tensor randn(long rows, long cols) {
        return torch.randn(rows, cols);
    }

    private static Tensor symmetric(int m) {
        Tensor g = torch.randn(m, m).div(new Scalar(Math.sqrt(m)));
        return g.add(g.t()); // exactly symmetric: each entry rounds the same sum
    }

    static Stream<Arguments> selfProductShapes() {
        // Around the AVX-512 12- and 8-row tiles, 32-row panels and 16-column transposes of the pack, and the AVX2
        // 6- and 4-row tiles, 16-row panels and 8-column transposes; one row, k = 1, several 256-column blocks of
        // the inner dimension (with a ragged last one), and a long one.
        return perVariant(Stream.of(Arguments.of(1, 1), Arguments.of(1, 9), Arguments.of(7, 3), Arguments.of(12, 12),
                Arguments.of(13, 17), Arguments.of(6, 8), Arguments.of(16, 16), Arguments.of(17, 9),
                Arguments.of(31, 64), Arguments.of(33, 65), Arguments.of(100, 1), Arguments.of(45, 600),
                Arguments.of(257, 300), Arguments.of(130, 1001), Arguments.of(40, 9001)));
    }

    @ParameterizedTest(name = "{0} {1}x{2}")
    @MethodSource("selfProductShapes")
    void selfProduct_isWithinAFloat32SumOfFloat64_andExactlySymmetric(NativeKernels.Variant variant, int m, int k) {
        NativeVariants.assumeRuns(variant);
        Tensor x = randn(m, k);
        Tensor out = poisoned(m, m);
        new NativeFloat32Products(variant).selfProduct(out, x, false);

        Tensor x64 = x.to(ScalarType.Double);
        Tensor bound = x64.abs().matmul(x64.abs().t()).mul(new Scalar(k * FLOAT32_ROUNDOFF));
        assertWithin(out, x64.matmul(x64.t()), bound, m + "x" + k);
        assertExactlySymmetric(out);
    }

    static Stream<Arguments> squareSides() {
        return perVariant(1, 9, 17, 40, 257, 300);
    }

    @ParameterizedTest(name = "{0} {1}x{1}")
    @MethodSource("squareSides")
    void selfProduct_ofASymmetricMatrix_readAsOne_isItsSquare(NativeKernels.Variant variant, int m) {
        NativeVariants.assumeRuns(variant);
        Tensor s = symmetric(m);
        Tensor out = poisoned(m, m);
        new NativeFloat32Products(variant).selfProduct(out, s, true);

        Tensor s64 = s.to(ScalarType.Double);
        Tensor bound = s64.abs().matmul(s64.abs()).mul(new Scalar(m * FLOAT32_ROUNDOFF));
        assertWithin(out, s64.matmul(s64), bound, m + "x" + m);
        assertExactlySymmetric(out);
    }

    @ParameterizedTest(name = "{0} {1}x{1}")
    @MethodSource("squareSides")
    void polynomial_isWithinAFloat32SumOfFloat64_andExactlySymmetric(NativeKernels.Variant variant, int m) {
        NativeVariants.assumeRuns(variant);
        Coefficients c = new Coefficients(3.4445, -4.7750, 2.0315);
        Tensor s = symmetric(m);
        Tensor out = poisoned(m, m);
        new NativeFloat32Products(variant).polynomial(out, s, c);

        Tensor s64 = s.to(ScalarType.Double);
        Tensor eye = torch.eye(m).to(ScalarType.Double);
        Tensor exact = s64.matmul(s64).mul(new Scalar(c.c())).add(s64.mul(new Scalar(c.b())))
                .add(eye.mul(new Scalar(c.a())));
        Tensor squareMagnitudes = s64.abs().matmul(s64.abs()).mul(new Scalar(Math.abs(c.c())));
        Tensor termMagnitudes = squareMagnitudes.add(s64.abs().mul(new Scalar(Math.abs(c.b()))))
                .add(eye.mul(new Scalar(Math.abs(c.a()))));
        // The product's float32 sum, then c·p + b·s (a multiply and a fused multiply-add) and + a on the diagonal.
        Tensor bound = squareMagnitudes.mul(new Scalar(m * FLOAT32_ROUNDOFF))
                .add(termMagnitudes.mul(new Scalar(3 * FLOAT32_ROUNDOFF)));
        assertWithin(out, exact, bound, m + "x" + m);
        assertExactlySymmetric(out);
    }

    static Stream<Arguments> timesShapes() {
        // m × m by m × n: ragged tiles and panels on both sides, n narrower than a tile, m over one 256-row block.
        return perVariant(Stream.of(Arguments.of(1, 1), Arguments.of(5, 3), Arguments.of(12, 40), Arguments.of(33, 31),
                Arguments.of(17, 9), Arguments.of(100, 257), Arguments.of(300, 70), Arguments.of(40, 1000)));
    }

    @ParameterizedTest(name = "{0} {1}x{1} by {1}x{2}")
    @MethodSource("timesShapes")
    void times_isWithinAFloat32SumOfFloat64_forAnyAndForASymmetricLeft(NativeKernels.Variant variant, int m, int n) {
        NativeVariants.assumeRuns(variant);
        Tensor r = randn(m, n);
        Tensor r64 = r.to(ScalarType.Double);
        for (boolean leftSymmetric : new boolean[]{false, true}) {
            Tensor l = leftSymmetric ? symmetric(m) : randn(m, m);
            Tensor out = poisoned(m, n);
            new NativeFloat32Products(variant).times(out, l, leftSymmetric, r);

            Tensor l64 = l.to(ScalarType.Double);
            Tensor bound = l64.abs().matmul(r64.abs()).mul(new Scalar(m * FLOAT32_ROUNDOFF));
            assertWithin(out, l64.matmul(r64), bound, m + "x" + n + (leftSymmetric ? " symmetric" : ""));
        }
    }

    @ParameterizedTest(name = "{0} {1}x{1}")
    @MethodSource("squareSides")
    void commutingTimes_ofTwoPolynomialsInOneMatrix_isWithinAFloat32SumOfFloat64_andExactlySymmetric(
            NativeKernels.Variant variant, int m) {
        NativeVariants.assumeRuns(variant);
        Tensor s = symmetric(m);
        Tensor t = torch.eye(m).mul(new Scalar(0.5)).add(s.matmul(s)); // a polynomial in s: they commute
        Tensor out = poisoned(m, m);
        new NativeFloat32Products(variant).commutingTimes(out, s, t);

        Tensor s64 = s.to(ScalarType.Double);
        Tensor t64 = t.to(ScalarType.Double);
        Tensor bound = s64.abs().matmul(t64.abs()).mul(new Scalar(m * FLOAT32_ROUNDOFF));
        assertWithin(out, s64.matmul(t64), bound, m + "x" + m);
        assertExactlySymmetric(out);
    }

    /** Every product and the normalisation of one input, on {@code threads} threads of {@code variant}. */
    private static Tensor[] allProducts(NativeKernels.Variant variant, Tensor x, Tensor s, int threads) {
        int m = Math.toIntExact(x.size(0));
        int k = Math.toIntExact(x.size(1));
        int v = variant.code;
        Tensor scratch = torch.empty(new long[]{NativeKernels.float32PackBytes(v, m, k)},
                new TensorOptions(ScalarType.Byte), null);
        Tensor gram = poisoned(m, m);
        Tensor poly = poisoned(m, m);
        Tensor product = poisoned(m, k);
        NativeKernels.float32SelfProduct(v, x.data_ptr().address(), m, k, false, gram.data_ptr().address(),
                scratch.data_ptr().address(), threads);
        NativeKernels.float32Polynomial(v, s.data_ptr().address(), m, poly.data_ptr().address(),
                scratch.data_ptr().address(), threads, 3.4445f, -4.7750f, 2.0315f);
        NativeKernels.float32Times(v, s.data_ptr().address(), false, x.data_ptr().address(), m, k, false,
                product.data_ptr().address(), scratch.data_ptr().address(), threads);
        Tensor commuting = poisoned(m, m);
        NativeKernels.float32Times(v, s.data_ptr().address(), true, gram.data_ptr().address(), m, m, true,
                commuting.data_ptr().address(), scratch.data_ptr().address(), threads);
        Tensor normalized = poisoned(m, k);
        Tensor tall = x.t().contiguous();
        NativeKernels.float32Normalize(v, tall.data_ptr().address(), m, k, true, normalized.data_ptr().address(),
                scratch.data_ptr().address(), threads, 1.0, 1e-7);
        Tensor plain = poisoned(m, k);
        NativeKernels.float32Normalize(v, x.data_ptr().address(), m, k, false, plain.data_ptr().address(),
                scratch.data_ptr().address(), threads, 1.0, 1e-7);
        Tensor symmetricSquare = poisoned(m, m);
        NativeKernels.float32SelfProduct(v, s.data_ptr().address(), m, m, true, symmetricSquare.data_ptr().address(),
                scratch.data_ptr().address(), threads);
        return new Tensor[]{gram, poly, product, normalized, commuting, plain, symmetricSquare};
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.muon.orthogonalize.NativeVariants#all")
    void results_areTheSameBits_forAnyThreadCount(NativeKernels.Variant variant) {
        NativeVariants.assumeRuns(variant);
        Tensor x = randn(70, 700);
        Tensor s = symmetric(70);
        Tensor[] reference = allProducts(variant, x, s, 1);
        for (int threads = 2; threads <= 3; threads++) {
            Tensor[] results = allProducts(variant, x, s, threads);
            for (int i = 0; i < results.length; i++) {
                assertTrue(torch.equal(results[i], reference[i]), "product " + i + " with " + threads
                        + " threads differs from one thread");
            }
        }
    }

    @Test
    void packBytes_followEachVariantsPanelsAndBlocks() {
        // The float32 variants give the same bits, so their results cannot show which ran; their scratch sizes do:
        // a call with a variant's code reaches that variant's table (32-row panels and blocks up to 768 deep for
        // AVX-512, 16 and 256 for AVX2), and a block is never deeper than the widest side, rounded up to 16.
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX2);
        int avx2 = NativeKernels.Variant.AVX2.code;
        int avx512 = NativeKernels.Variant.AVX512.code;
        assertEquals((1 + 1) * 16 * 16 * 4 + 64, NativeKernels.float32PackBytes(avx2, 16, 16));
        assertEquals((1 + 1) * 32 * 16 * 4 + 64, NativeKernels.float32PackBytes(avx512, 16, 16));
        assertEquals((4 + 1) * 32 * 112 * 4 + 64, NativeKernels.float32PackBytes(avx512, 9, 100));
        assertEquals((125 + 1) * 16 * 256 * 4 + 64, NativeKernels.float32PackBytes(avx2, 16, 2000));
        assertEquals((63 + 1) * 32 * 768 * 4 + 64, NativeKernels.float32PackBytes(avx512, 16, 2000));
    }

    @ParameterizedTest(name = "{0}x{1}")
    @MethodSource("variantShapes")
    void bothVariants_giveTheSameBits(int m, int k) {
        // Both sum every value in one order with one FMA per term, one chain across the blocks of the inner
        // dimension (256 deep for AVX2, up to 768 for AVX-512: the shapes below span several of either), and share
        // the epilogue and the norm's reduction (muon_avx2_kernels.c): forcing the AVX2 kernels on an AVX-512
        // machine changes no float32 result.
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX512);
        NativeVariants.assumeRuns(NativeKernels.Variant.AVX2);
        Tensor x = randn(m, k);
        Tensor s = symmetric(m);
        Tensor[] wide = allProducts(NativeKernels.Variant.AVX512, x, s, 2);
        Tensor[] narrow = allProducts(NativeKernels.Variant.AVX2, x, s, 2);
        for (int i = 0; i < wide.length; i++) {
            assertTrue(torch.equal(wide[i], narrow[i]), m + "x" + k + ": product " + i + " differs between the "
                    + "variants by " + wide[i].sub(narrow[i]).abs().max().item_double());
        }
    }

    static Stream<Arguments> variantShapes() {
        // Ragged tiles and panels of both variants, inner dimensions spanning several blocks of either (AVX2's 256,
        // AVX-512's equal blocks of up to 768), and an inner dimension below one transpose.
        return Stream.of(Arguments.of(1, 3), Arguments.of(7, 5), Arguments.of(37, 300), Arguments.of(70, 700),
                Arguments.of(129, 517), Arguments.of(33, 1700), Arguments.of(800, 800));
    }

    static Stream<Arguments> algorithms() {
        return perVariant(Stream.of(Arguments.of(NsAlgorithm.SYMMETRIC), Arguments.of(NsAlgorithm.GRAM)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("algorithms")
    void kernels_onTheNativeProducts_agreeWithOpenBlas_andAreAsCloseToFloat64(NativeKernels.Variant variant,
                                                                              NsAlgorithm algorithm) {
        NativeVariants.assumeRuns(variant);
        assumeTrue(OpenBlas.isAvailable(), () -> "OpenBLAS off: " + OpenBlas.unavailabilityCause());
        int m = 96;
        int n = algorithm == NsAlgorithm.GRAM ? 400 : 130;
        NewtonSchulzConfig config = new NewtonSchulzConfig(CoefficientSchedule.constant(
                new Coefficients(3.4445, -4.7750, 2.0315)), 5, 1e-7, NsPrecision.FLOAT32, algorithm);
        Tensor update = randn(m, n);
        Tensor exact = new NewtonSchulz(config.withNsPrecision(NsPrecision.FLOAT64)
                .withNsAlgorithm(NsAlgorithm.GEMM)).orthogonalize(update.to(ScalarType.Double));
        double[] errors = new double[2];
        Tensor[] results = new Tensor[2];
        for (int i = 0; i < 2; i++) {
            boolean nativeProducts = i == 0;
            Workspace ws = new Workspace(0, m, n, ScalarType.Float, new Device("cpu"));
            BlasKernels kernels = new BlasKernels(ws, false, nativeProducts ? variant : null);
            assertEquals(nativeProducts, kernels.isNative());
            assertTrue(kernels.normalize(update, false, config));
            results[i] = (algorithm == NsAlgorithm.GRAM ? kernels.gram(config) : kernels.symmetric(config)).clone();
            errors[i] = relative(results[i].to(ScalarType.Double).sub(exact), exact);
        }
        double apart = relative(results[0].sub(results[1]), results[1]);
        assertTrue(apart < 1e-5, algorithm + ": native and OpenBLAS differ by " + apart);
        // The native normalisation sums the norm in double, as OpenBLAS's snrm2 does; libtorch's float32 norm put
        // the symmetric kernel's error at 1.2e-5 where OpenBLAS's was 1.7e-6 (512 x 2048, Gaussian).
        assertTrue(errors[0] <= 2 * errors[1], algorithm + ": error against float64 " + errors[0]
                + " natively, " + errors[1] + " on OpenBLAS");
    }

    private static double relative(Tensor difference, Tensor reference) {
        return difference.norm().item_double() / reference.norm().item_double();
    }

    @ParameterizedTest(name = "{0} {1}x{2}, transposed {3}")
    @MethodSource("normalizeShapes")
    void normalize_isWithinTwoRoundingsOfFloat64(NativeKernels.Variant variant, int m, int n, boolean transposed) {
        NativeVariants.assumeRuns(variant);
        double safety = 1.02;
        Tensor g = transposed ? randn(n, m) : randn(m, n);
        Tensor out = poisoned(m, n);
        new NativeFloat32Products(variant).normalize(out, g, transposed, safety, 1e-7);

        Tensor wide = (transposed ? g.t() : g).to(ScalarType.Double);
        Tensor exact = wide.div(new Scalar(safety * wide.norm().item_double()));
        // The norm and the reciprocal each rounded to float32, then the product: four roundings at most.
        Tensor bound = exact.abs().mul(new Scalar(4 * FLOAT32_ROUNDOFF));
        assertWithin(out, exact, bound, m + "x" + n + (transposed ? " transposed" : ""));
    }

    static Stream<Arguments> normalizeShapes() {
        // Around the 16 x 16 transposes and the 16-float vectors, one element, a row of 8 + tail doubles, and long
        // rows, whose sums a float32 accumulator would get wrong beyond the bound.
        return perVariant(Stream.of(Arguments.of(1, 1, false), Arguments.of(1, 1, true), Arguments.of(3, 17, false),
                Arguments.of(3, 17, true), Arguments.of(8, 8, true), Arguments.of(16, 16, true),
                Arguments.of(33, 70, true), Arguments.of(100, 257, false), Arguments.of(100, 257, true),
                Arguments.of(2, 200000, false)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.muon.orthogonalize.NativeVariants#all")
    void normalize_ofZeros_dividesByEps(NativeKernels.Variant variant) {
        NativeVariants.assumeRuns(variant);
        Tensor out = poisoned(4, 6);
        new NativeFloat32Products(variant).normalize(out, torch.zeros(4, 6), false, 1.0, 1e-7);
        assertEquals(0.0, out.abs().max().item_double());
        Tensor tiny = torch.full(new long[]{2, 2}, new Scalar(1e-9)).to(ScalarType.Float);
        Tensor scaled = poisoned(2, 2);
        new NativeFloat32Products(variant).normalize(scaled, tiny, false, 1.0, 1e-7);
        // ‖tiny‖ = 2e-9 < eps: the quotient is tiny / eps.
        assertEquals(1e-2, scaled.max().item_double(), 1e-8);
    }

    @Test
    void float32Kernels_useTheNativeProducts_exactlyWhereTheyRun() {
        ShapeKernels kernels = new ShapeKernels(new Workspace(0, 8, 16, ScalarType.Float, new Device("cpu")));
        assertEquals(NativeKernels.isAvailable(), kernels.blas(false).isNative());
        ShapeKernels float64 = new ShapeKernels(new Workspace(0, 8, 16, ScalarType.Double, new Device("cpu")));
        assertEquals(false, float64.blas(true).isNative());
    }

    static Stream<Arguments> emptyShapes() {
        return perVariant(Stream.of(Arguments.of(0, 5), Arguments.of(5, 0), Arguments.of(0, 0)));
    }

    @ParameterizedTest(name = "{0} {1}x{2}")
    @MethodSource("emptyShapes")
    void products_ofEmptyOperands_areEmpty_orZeroOverAnEmptyInnerDimension(NativeKernels.Variant variant, int m,
                                                                         int k) {
        NativeVariants.assumeRuns(variant);
        NativeFloat32Products products = new NativeFloat32Products(variant);
        Tensor x = randn(m, k);
        Tensor gram = poisoned(m, m);
        products.selfProduct(gram, x, false);
        assertTrue(torch.equal(gram, torch.zeros(m, m)), "x·xᵀ of " + m + "x" + k);
        Tensor poly = poisoned(m, m);
        products.polynomial(poly, torch.zeros(m, m), new Coefficients(2, 3, 4));
        assertTrue(torch.equal(poly, torch.eye(m).mul(new Scalar(2))), "the polynomial of " + m + "x" + m + " zeros");
        // Empty results (every shape here has m·k = 0): each call must return without touching a data pointer,
        // which an empty tensor lacks.
        products.times(poisoned(m, k), randn(m, m), false, x);
        products.normalize(poisoned(m, k), x, false, 1.0, 1e-7);
        products.normalize(poisoned(m, k), x.t().contiguous(), true, 1.0, 1e-7);
        if (m == 0) {
            products.commutingTimes(poisoned(0, 0), torch.zeros(0, 0), torch.zeros(0, 0));
        }
    }

    static Stream<Arguments> misuse() {
        Consumer<NativeFloat32Products> view = p -> p.selfProduct(poisoned(12, 12), randn(16, 12).t(), false);
        Consumer<NativeFloat32Products> float64 = p -> p.times(poisoned(4, 4),
                torch.eye(4).to(ScalarType.Double), true, randn(4, 4));
        Consumer<NativeFloat32Products> overlap = p -> {
            Tensor s = symmetric(4);
            p.polynomial(s, s, new Coefficients(1, 1, 1));
        };
        Consumer<NativeFloat32Products> wrongOut = p -> p.times(poisoned(4, 5), randn(4, 4), false, randn(4, 6));
        return Stream.of(
                Arguments.of("a view", view, "the native float32 products need contiguous 12x16 float32 CPU tensors, "
                        + "got 12x16 Float (contiguous: false)"),
                Arguments.of("float64", float64, "the native float32 products need contiguous 4x4 float32 CPU "
                        + "tensors, got 4x4 Double (contiguous: true)"),
                Arguments.of("out over an operand", overlap,
                        "the native float32 products write out beside their operands, not over them"),
                Arguments.of("out of another shape", wrongOut, "the native float32 products need contiguous 4x6 "
                        + "float32 CPU tensors, got 4x5 Float (contiguous: true)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("misuse")
    void products_refuseWhatTheKernelsCannotRead(String what, Consumer<NativeFloat32Products> call, String message) {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> call.accept(new NativeFloat32Products(NativeKernels.Variant.AVX2)));
        assertEquals(message, e.getMessage());
    }

    private static void assertWithin(Tensor out, Tensor exact, Tensor bound, String what) {
        // A float32 sum's error, plus the rounding of the result to float32 and a floor for exact zeros.
        Tensor allowed = bound.add(exact.abs().mul(new Scalar(FLOAT32_ROUNDOFF))).add(new Scalar(1e-30));
        double worst = out.to(ScalarType.Double).sub(exact).abs().sub(allowed).max().item_double();
        assertTrue(worst <= 0, what + ": an entry is " + worst + " beyond its rounding bound (NaN: not written)");
    }

    private static void assertExactlySymmetric(Tensor out) {
        assertEquals(0.0, out.sub(out.t()).abs().max().item_double(), "the result is not exactly symmetric");
    }
}
