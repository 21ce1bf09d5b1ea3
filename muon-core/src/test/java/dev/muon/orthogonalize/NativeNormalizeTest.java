package dev.muon.orthogonalize;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ShortBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The native bfloat16 normalisation ({@link NativeKernels#bfloat16Normalize}), for each variant this CPU runs: the
 * bits of its stated formula (norm summed in double, rows in order, 16 lanes per row; then libtorch's float32
 * quotient rounded to bfloat16), recomputed here in Java in the same order; within one bfloat16 step of libtorch's
 * own normalisation; plain and transposed sources, safety factors, and a zero matrix (eps).
 */
@ExtendWith(NativeScopePerTest.class)
class NativeNormalizeTest {
    static Stream<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        int[][] shapes = {{1, 1}, {3, 5}, {17, 33}, {64, 256}, {40, 300}, {96, 1000}};
        NativeVariants.all().forEach(v -> {
            for (int[] shape : shapes) {
                for (boolean transposed : new boolean[]{false, true}) {
                    for (double safety : new double[]{1.0, 1.05}) {
                        cases.add(Arguments.of(v, shape[0], shape[1], transposed, safety));
                    }
                }
            }
        });
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} {1}x{2} transposed={3} safety={4}")
    @MethodSource("cases")
    void normalize_givesItsFormulasBits_andLibtorchsWithinOneStep(NativeKernels.Variant variant, int m, int n,
                                                                 boolean transposed, double safety) {
        NativeVariants.assumeRuns(variant);
        torch.manual_seed(m * 1000L + n);
        // g is the m x n matrix meant; with transposed, it is the transposed view of a contiguous n x m one.
        Tensor source = torch.randn(transposed ? new long[]{n, m} : new long[]{m, n}).mul_(new Scalar(3.0))
                .to(ScalarType.BFloat16);
        Tensor g = transposed ? source.mT() : source;
        Tensor out = torch.zeros(m, n).to(ScalarType.BFloat16);

        assertTrue(NativeKernels.bfloat16Normalize(variant.code, source.data_ptr().address(), m, n, transposed,
                out.data_ptr().address(), torch.get_num_threads(), safety, 1e-7));

        assertArrayEquals(formula(g.contiguous(), source, safety, 1e-7), bits(out), "the formula's bits");
        Tensor norm = torch.linalg_vector_norm(g, new Scalar(2.0), new long[]{-2, -1}, true,
                new ScalarTypeOptional(ScalarType.Float)).mul_(new Scalar(safety)).clamp_min_(new Scalar(1e-7));
        short[] libtorch = bits(torch.div(g, norm).to(ScalarType.BFloat16));
        short[] ours = bits(out);
        for (int i = 0; i < ours.length; i++) {
            int steps = Math.abs(ours[i] - libtorch[i]);
            assertTrue(steps <= 1, "entry " + i + ": " + ours[i] + " against libtorch's " + libtorch[i]);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.muon.orthogonalize.NativeVariants#all")
    void normalize_ofZeros_isZeros(NativeKernels.Variant variant) {
        NativeVariants.assumeRuns(variant);
        Tensor g = torch.zeros(8, 12).to(ScalarType.BFloat16);
        Tensor out = torch.full(new long[]{8, 12}, new Scalar(7.0)).to(ScalarType.BFloat16);

        assertTrue(NativeKernels.bfloat16Normalize(variant.code, g.data_ptr().address(), 8, 12, false,
                out.data_ptr().address(), 2, 1.0, 1e-7));

        assertArrayEquals(new short[96], bits(out));
    }

    /**
     * The kernel's formula in Java, in its order: per row of {@code source} (the stored matrix), 16 lanes of
     * double sums, added lane by lane; rows in order; the norm to float32, times safety in float32, at least eps;
     * each value of {@code meant} (row-major) divided in float32, rounded to bfloat16 to nearest even.
     */
    private static short[] formula(Tensor meant, Tensor source, double safety, double eps) {
        short[] stored = bits(source);
        int rows = (int) source.size(0);
        int cols = (int) source.size(1);
        double sum = 0.0;
        for (int r = 0; r < rows; r++) {
            double[] lanes = new double[16];
            for (int c = 0; c < cols; c++) {
                double v = value(stored[r * cols + c]);
                lanes[c % 16] += v * v;
            }
            double row = 0.0;
            for (double lane : lanes) {
                row += lane;
            }
            sum += row;
        }
        float norm = (float) Math.sqrt(sum);
        if (safety != 1.0) {
            norm *= (float) safety;
        }
        float denominator = Math.max(norm, (float) eps);
        short[] values = bits(meant);
        short[] out = new short[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = round(value(values[i]) / denominator);
        }
        return out;
    }

    private static float value(short b) {
        return Float.intBitsToFloat((b & 0xFFFF) << 16);
    }

    private static short round(float f) {
        int u = Float.floatToRawIntBits(f);
        if ((u & 0x7FFFFFFF) > 0x7F800000) {
            return (short) 0x7FC0;
        }
        return (short) ((u + 0x7FFF + ((u >>> 16) & 1)) >>> 16);
    }

    /** A contiguous bfloat16 tensor's raw values. */
    private static short[] bits(Tensor t) {
        Tensor c = t.contiguous();
        short[] out = new short[(int) c.numel()];
        ShortBuffer buffer = new org.bytedeco.javacpp.ShortPointer(c.data_ptr()).capacity(out.length).asBuffer();
        buffer.get(out);
        return out;
    }
}
