package dev.muon.orthogonalize;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link GramProduct} against a plain {@code x·xᵀ}, for shapes around its block size, on libtorch's row blocks of
 * GEMMs and, in bfloat16, on each variant of the native half product this CPU runs.
 */
@ExtendWith(NativeScopePerTest.class)
class GramProductTest {
    @BeforeEach
    void seed() {
        torch.manual_seed(7);
    }

    static Stream<Arguments> cases() {
        Stream.Builder<Arguments> cases = Stream.builder();
        int[][] shapes = {{1, 5}, {3, 2}, {128, 40}, {129, 300}, {300, 1000}, {257, 64}, {600, 700}};
        for (int[] shape : shapes) {
            cases.add(Arguments.of(shape[0], shape[1], ScalarType.Double, 1e-13, null));
            cases.add(Arguments.of(shape[0], shape[1], ScalarType.Float, 1e-6, null));
            // bfloat16 products round each entry to 8 bits: 2^-8 relative, against a float64 product of the
            // same bfloat16 inputs.
            cases.add(Arguments.of(shape[0], shape[1], ScalarType.BFloat16, 4e-3, null));
            for (NativeKernels.Variant variant : NativeKernels.Variant.values()) {
                cases.add(Arguments.of(shape[0], shape[1], ScalarType.BFloat16, 4e-3, variant));
            }
        }
        return cases.build();
    }

    @ParameterizedTest(name = "{0}x{1} {2}, native {4}")
    @MethodSource("cases")
    void into_writesTheFullSymmetricGramMatrix(int rows, int cols, ScalarType dtype, double tolerance,
                                               NativeKernels.Variant nativeKernel) {
        if (nativeKernel != null) {
            NativeVariants.assumeRuns(nativeKernel);
        }
        Tensor x = torch.randn(rows, cols).to(dtype);
        // Garbage in the output, as a reused workspace holds: every entry must be overwritten.
        Tensor out = torch.full(new long[]{rows, rows}, new org.bytedeco.pytorch.Scalar(1e3)).to(dtype);
        GramProduct product = new GramProduct(rows, x.options(), nativeKernel, 0, MatrixProducts.LIBTORCH);
        assertEquals(nativeKernel != null, product.usesNativeFor(cols), "the form asked for");
        product.into(out, x);

        Tensor x64 = x.to(ScalarType.Double);
        double[] expected = Tensors.values(x64.matmul(x64.t()));
        assertTrue(Tensors.relativeError(out, expected) <= tolerance,
                rows + "x" + cols + " " + dtype + ": relative error above " + tolerance);
        assertEquals(0.0, out.sub(out.t()).abs().max().item_double(), "the result is not exactly symmetric");
    }
}
