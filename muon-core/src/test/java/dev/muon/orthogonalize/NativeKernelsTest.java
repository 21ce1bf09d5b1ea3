package dev.muon.orthogonalize;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
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

import java.util.Arrays;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The native bfloat16 half product and its polynomial form, in each variant, against float64, entry by entry, with
 * the bound that float32 accumulation and one rounding to bfloat16 allow; the variant this process runs, and why
 * not (the probe's causes and the selection: {@link NativeLibraryTest}). The kernel tests skip, with the reason, the variants this machine cannot run (no AVX512_BF16, no AVX2,
 * or a jar built without gcc).
 */
@ExtendWith(NativeScopePerTest.class)
class NativeKernelsTest {
    /** Half a bfloat16 unit in the last place, relative: the one rounding of each result. */
    private static final double HALF_ULP = Math.pow(2, -8);
    /** float32's unit roundoff; k of them bound a k-term float32 sum, relative to the sum of magnitudes. */
    private static final double FLOAT32_ROUNDOFF = Math.pow(2, -24);

    @BeforeEach
    void seed() {
        torch.manual_seed(11);
    }

    @Test
    void variant_isTheOneThePropertyAsksFor_andPresentExactlyWhenAvailable() {
        assertEquals(NativeKernels.isAvailable(), NativeKernels.variant().isPresent());
        assumeTrue(NativeKernels.isAvailable(), () -> "native kernels off: " + NativeKernels.unavailabilityCause());
        // Run with -Ddev.muon.native.isa=avx2 (mvn -B verify passes it on), this checks that the property reached
        // the probe; without it, that auto took the widest variant this CPU runs.
        String requested = System.getProperty(NativeLibrary.ISA_PROPERTY, "auto").trim();
        NativeKernels.Variant expected = requested.equalsIgnoreCase("auto")
                ? NativeVariants.all().filter(v -> NativeKernels.variantUnavailabilityCause(v) == null).findFirst()
                        .orElseThrow()
                : NativeKernels.Variant.valueOf(requested.toUpperCase(java.util.Locale.ROOT));
        assertEquals(expected, NativeKernels.variant().orElseThrow());
    }

    @Test
    void everyVariant_isCallable_orNamesWhyNot() {
        for (NativeKernels.Variant v : NativeKernels.Variant.values()) {
            Throwable cause = NativeKernels.variantUnavailabilityCause(v);
            if (NativeKernels.variant().orElse(null) == v) {
                assertNull(cause, v + " runs, so it can be called");
            } else if (cause != null) {
                // The library did not load (the process's cause), or it did and this CPU lacks the variant.
                assertTrue(cause == NativeKernels.unavailabilityCause()
                        || cause.getMessage().equals("this CPU lacks " + v.features()), v + ": " + cause.getMessage());
            }
        }
    }

    @Test
    void ensureAvailable_throwsTheCause_exactlyWhenUnavailable() {
        if (NativeKernels.isAvailable()) {
            NativeKernels.ensureAvailable();
            assertNull(NativeKernels.unavailabilityCause());
        } else {
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    NativeKernels::ensureAvailable);
            assertEquals("muon-core's native CPU kernels cannot run here: "
                    + NativeKernels.unavailabilityCause().getMessage(), e.getMessage());
            assertEquals(NativeKernels.unavailabilityCause(), e.getCause());
        }
    }

    @Test
    void bufferKernels_shareTheOneLoad_itsVariantAndItsCause() {
        assertEquals(NativeKernels.isAvailable(), BufferKernels.isAvailable());
        assertEquals(NativeKernels.variant().map(NativeKernels.Variant::propertyValue), BufferKernels.variant());
        assertSame(NativeKernels.unavailabilityCause(), BufferKernels.unavailabilityCause());
    }

    @Test
    void theBuildPutsTheLibraryInTheJar_whereGccIsOnPath() {
        // CI builds with gcc on Linux x86-64: a build step that silently stopped producing the library fails here.
        assumeTrue("Linux".equals(System.getProperty("os.name")) && "amd64".equals(System.getProperty("os.arch")));
        String path = System.getenv().getOrDefault("PATH", "");
        boolean gcc = java.util.Arrays.stream(path.split(java.io.File.pathSeparator))
                .anyMatch(dir -> java.nio.file.Files.isExecutable(java.nio.file.Path.of(dir, "gcc")));
        assumeTrue(gcc, "no gcc on PATH: the build skips the native library");
        assertTrue(NativeKernels.class.getResource(NativeLibrary.LIBRARY_RESOURCE) != null,
                "no " + NativeLibrary.LIBRARY_RESOURCE + " on the class path");
    }

    static Stream<Arguments> productShapes() {
        // Around the AVX-512 kernel's 8-row tiles and 32-row panels and the AVX2 kernel's 6- and 4-row tiles,
        // 16-row panels and 8-column packs, odd k (a half-filled column pair), k = 1, one row, and long inner
        // dimensions (even and odd).
        int[][] shapes = {{1, 1}, {1, 9}, {7, 3}, {8, 8}, {6, 17}, {16, 16}, {17, 7}, {31, 64}, {33, 65}, {100, 1},
                {257, 300}, {130, 1001}, {33, 8192}, {40, 9001}};
        return everyVariantWith(shapes);
    }

    @ParameterizedTest(name = "{0} {1}x{2}")
    @MethodSource("productShapes")
    void halfProduct_isWithinOneRoundingOfFloat64_andExactlySymmetric(NativeKernels.Variant variant, int m, int k) {
        NativeVariants.assumeRuns(variant);
        Tensor x = torch.randn(m, k).to(ScalarType.BFloat16);
        Tensor out = nativeHalfProduct(x, variant);

        Tensor x64 = x.to(ScalarType.Double);
        Tensor exact = x64.matmul(x64.t());
        Tensor magnitudes = x64.abs().matmul(x64.abs().t());
        // |fl32(sum) - sum| <= k u sum|terms|, then one rounding: |out - e| <= 2^-8 (|e| + err32) + err32.
        Tensor err32 = magnitudes.mul(new Scalar(k * FLOAT32_ROUNDOFF));
        assertWithin(out, exact, exact.abs().add(err32).mul(new Scalar(HALF_ULP)).add(err32), m + "x" + k);
        assertExactlySymmetric(out);
    }

    static Stream<Arguments> polynomialSides() {
        return NativeVariants.all().flatMap(v -> IntStream.of(1, 9, 17, 40, 257).mapToObj(m -> Arguments.of(v, m)));
    }

    @ParameterizedTest(name = "{0} {1}x{1}")
    @MethodSource("polynomialSides")
    void polynomial_isWithinOneRoundingOfFloat64_andExactlySymmetric(NativeKernels.Variant variant, int m) {
        NativeVariants.assumeRuns(variant);
        double a = 3.4445;
        double b = -4.7750;
        double c = 2.0315;
        Tensor g = torch.randn(m, m).to(ScalarType.Double).div(new Scalar(Math.sqrt(m)));
        Tensor s = g.add(g.t()).to(ScalarType.BFloat16); // exactly symmetric: each entry rounds the same sum
        Tensor out = nanFilled(m);
        halfProduct(m, s, variant).fusedPolynomialInto(out, s, a, b, c);

        Tensor s64 = s.to(ScalarType.Double);
        Tensor eye = torch.eye(m).to(ScalarType.Double);
        Tensor exact = s64.matmul(s64).mul(new Scalar(c)).add(s64.mul(new Scalar(b))).add(eye.mul(new Scalar(a)));
        Tensor squareMagnitudes = s64.abs().matmul(s64.abs()).mul(new Scalar(Math.abs(c)));
        Tensor termMagnitudes = squareMagnitudes.add(s64.abs().mul(new Scalar(Math.abs(b))))
                .add(eye.mul(new Scalar(Math.abs(a))));
        // The product's float32 sum, then c·p + b·s (one fused rounding) and + a on the diagonal (one more).
        Tensor err32 = squareMagnitudes.mul(new Scalar(m * FLOAT32_ROUNDOFF))
                .add(termMagnitudes.mul(new Scalar(2 * FLOAT32_ROUNDOFF)));
        assertWithin(out, exact, exact.abs().add(err32).mul(new Scalar(HALF_ULP)).add(err32), m + "x" + m);
        assertExactlySymmetric(out);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.muon.orthogonalize.NativeVariants#all")
    void halfProduct_roundsTiesToEven(NativeKernels.Variant variant) {
        NativeVariants.assumeRuns(variant);
        // Exact float32 sums that lie halfway between two bfloat16 values (unit 2^-7 at 1): 1 + 2^-8 between 1
        // and 1 + 2^-7 rounds down to the even 1; 1 + 3·2^-8 between 1 + 2^-7 and 1 + 2^-6 rounds up to the even
        // 1 + 2^-6. Truncation, or rounding half up, gets one of the two wrong.
        double h = Math.pow(2, -4);
        Tensor x = torch.tensor(new float[]{1, (float) h, 0, 0, 1, (float) h, (float) h, (float) h})
                .reshape(2, 4).to(ScalarType.BFloat16);
        Tensor out = nativeHalfProduct(x, variant);
        double[] values = Tensors.values(out.to(ScalarType.Double));
        assertEquals(1.0, values[0], "1 + 2^-8");
        assertEquals(1.0, values[1], "1 + 2^-8 (off the diagonal)");
        assertEquals(1.0, values[2], "its mirror");
        assertEquals(1 + Math.pow(2, -6), values[3], "1 + 3 * 2^-8");
    }

    static Stream<Arguments> subnormalProducts() {
        // vdpbf16ps treats subnormal inputs as zero; the AVX2 kernel widens them exactly.
        return Stream.of(Arguments.of(NativeKernels.Variant.AVX512, 0.0),
                Arguments.of(NativeKernels.Variant.AVX2, Math.pow(2, -70)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("subnormalProducts")
    void eachVariant_runsItsOwnCode_asItsSubnormalsShow(NativeKernels.Variant variant, double expected) {
        NativeVariants.assumeRuns(variant);
        // The variants' float32 products give the same bits (NativeFloat32ProductsTest), so this product, where
        // the instruction sets differ, is what shows that a call for one variant reaches that variant's code.
        float subnormal = (float) Math.pow(2, -130);
        Tensor x = torch.tensor(new float[]{subnormal, 0, (float) Math.pow(2, 60), 0}).reshape(2, 2)
                .to(ScalarType.BFloat16);
        Tensor out = nativeHalfProduct(x, variant);
        double[] values = Tensors.values(out.to(ScalarType.Double));
        assertEquals(expected, values[1], "2^-130 * 2^60");
        assertEquals(expected, values[2], "its mirror");
    }

    static Stream<Arguments> emptyShapes() {
        return everyVariantWith(new int[][]{{0, 5}, {5, 0}, {0, 0}});
    }

    @ParameterizedTest(name = "{0} {1}x{2}")
    @MethodSource("emptyShapes")
    void halfProduct_ofAnEmptyMatrix_isEmptyOrZero(NativeKernels.Variant variant, int m, int k) {
        NativeVariants.assumeRuns(variant);
        Tensor x = torch.randn(m, k).to(ScalarType.BFloat16);
        Tensor out = nativeHalfProduct(x, variant);
        // x·xᵀ over an empty inner dimension is the zero matrix, as libtorch's GEMM gives it.
        assertTrue(torch.equal(out, torch.zeros(m, m).to(ScalarType.BFloat16)), m + "x" + k);
        if (m == k) {
            Tensor poly = torch.empty(new long[]{0, 0}, x.options(), null);
            halfProduct(0, x, variant).fusedPolynomialInto(poly, x, 1, 2, 3);
            assertEquals(0, poly.numel());
        }
    }

    /** Every variant with every {@code {m, k}} of {@code shapes}. */
    private static Stream<Arguments> everyVariantWith(int[][] shapes) {
        return NativeVariants.all().flatMap(v -> Arrays.stream(shapes).map(s -> Arguments.of(v, s[0], s[1])));
    }

    /** A bfloat16 {@code m × m} output of NaN, as a reused workspace may hold: every entry must be overwritten. */
    private static Tensor nanFilled(int m) {
        return torch.full(new long[]{m, m}, new Scalar(Double.NaN)).to(ScalarType.BFloat16);
    }

    /** {@code x·xᵀ} of a bfloat16 {@code x} by {@code variant}'s half product, into a {@link #nanFilled} output. */
    private static Tensor nativeHalfProduct(Tensor x, NativeKernels.Variant variant) {
        int m = (int) x.size(0);
        Tensor out = nanFilled(m);
        halfProduct(m, x, variant).into(out, x);
        return out;
    }

    private static void assertExactlySymmetric(Tensor out) {
        assertEquals(0.0, out.sub(out.t()).abs().max().item_double(), "the result is not exactly symmetric");
    }

    private static void assertWithin(Tensor out, Tensor exact, Tensor bound, String what) {
        Tensor excess = out.to(ScalarType.Double).sub(exact).abs().sub(bound);
        double worst = excess.max().item_double();
        assertTrue(worst <= 0, what + ": an entry is " + worst + " beyond its rounding bound (NaN: not written)");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.muon.orthogonalize.NativeVariants#all")
    void result_isTheSameBits_forAnyThreadCount_andAloneOrInABatch(NativeKernels.Variant variant) {
        NativeVariants.assumeRuns(variant);
        int m = 70;
        int k = 4100;
        Tensor x = torch.randn(3, m, k).to(ScalarType.BFloat16);
        Tensor scratch = torch.empty(new long[]{NativeKernels.bfloat16PackBytes(variant.code, m, k)},
                new TensorOptions(ScalarType.Byte), null);
        Tensor batch = torch.empty(new long[]{3, m, m}, x.options(), null);
        NativeKernels.bfloat16SelfProduct(variant.code, x.data_ptr().address(), 3, m, k, batch.data_ptr().address(),
                scratch.data_ptr().address(), 2);
        for (int threads = 1; threads <= 3; threads++) {
            for (int i = 0; i < 3; i++) {
                Tensor xi = x.select(0, i).contiguous();
                Tensor alone = torch.empty(new long[]{m, m}, x.options(), null);
                NativeKernels.bfloat16SelfProduct(variant.code, xi.data_ptr().address(), 1, m, k,
                        alone.data_ptr().address(), scratch.data_ptr().address(), threads);
                assertTrue(torch.equal(alone, batch.select(0, i)), "matrix " + i + " with " + threads
                        + " threads differs from the batch run");
            }
        }
    }

    @Test
    void nativeProduct_rejectsAView() {
        // Refused before any native call: runs on any machine.
        Tensor x = torch.randn(16, 12).to(ScalarType.BFloat16);
        Tensor out = torch.empty(new long[]{12, 12}, x.options(), null);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> halfProduct(12, x, NativeKernels.Variant.AVX2).into(out, x.t()));
        assertEquals("the native half product needs contiguous 2-D bfloat16 CPU tensors of 12 rows, got x 12x16 "
                + "(contiguous: false) and out 12x12 (contiguous: true)", e.getMessage());
    }

    @Test
    void polynomial_withoutTheNativeKernel_isRefused() {
        Tensor s = torch.eye(4).to(ScalarType.BFloat16);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> halfProduct(4, s, null).fusedPolynomialInto(torch.empty_like(s), s, 1, 1, 1));
        assertEquals("the fused polynomial needs the native kernel, which this product lacks", e.getMessage());
        IllegalStateException tooLarge = assertThrows(IllegalStateException.class,
                () -> halfProduct(4096, s, NativeKernels.Variant.AVX2)
                        .fusedPolynomialInto(torch.empty_like(s), s, 1, 1, 1));
        assertEquals("the fused polynomial runs natively up to 8388608 elements, and 4096 x 4096 is more",
                tooLarge.getMessage());
    }

    @Test
    void largeProducts_runAsRowBlocks() {
        Tensor s = torch.eye(4).to(ScalarType.BFloat16);
        long limit = GramProduct.NATIVE_MAX_ELEMENTS;
        GramProduct product = halfProduct(1024, s, NativeKernels.Variant.AVX2);
        assertTrue(product.usesNativeFor(limit / 1024), "at the limit");
        assertFalse(product.usesNativeFor(limit / 1024 + 1), "past the limit");
        assertTrue(product.isNative(), "1024 x 1024 squares");
        assertFalse(halfProduct(4096, s, NativeKernels.Variant.AVX2).isNative(),
                "4096 x 4096 squares: row blocks");
        assertFalse(halfProduct(8, s, null).usesNativeFor(8), "the native kernel not chosen");
    }

    /** A {@link GramProduct} of {@code rows × rows} results for tensors like {@code like}, half products always. */
    private static GramProduct halfProduct(long rows, Tensor like, NativeKernels.Variant variant) {
        return new GramProduct(rows, like.options(), variant, 0, MatrixProducts.LIBTORCH);
    }
}
