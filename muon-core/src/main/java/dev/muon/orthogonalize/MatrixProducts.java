package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The full products of the libtorch forms of Newton–Schulz ({@code out = a·b}, 2-D or a batch of them): libtorch's
 * GEMM in the operands' dtype, or, for bfloat16 on a CPU whose native kernels run their AVX2 variant, the operands
 * widened to float32, multiplied by libtorch's float32 GEMM and the result rounded once to bfloat16.
 *
 * <p>Why: without AVX512_BF16 (or AMX) neither libtorch's oneDNN nor its own kernels have a fast bfloat16 GEMM, and
 * the products run on ATen's reference loops, about 1 GFLOP/s on two cores: one Newton–Schulz at 1024×4096 took
 * 42 s there against 0.23 s in float32 (Zen 4 capped to AVX2, docs/benchmarks.md). Widening is exact and ATen's
 * reference GEMM also accumulates in float32 and rounds once, so the result is the same product up to the order
 * of the float32 sums. The AVX2 variant is what such CPUs select ({@link NativeKernels}); where the AVX-512 variant
 * runs, or no variant does, libtorch keeps the products.
 *
 * <p>The float32 copies live in scratch grown to the largest product so far and kept, like the workspace they
 * serve: one user at a time.
 */
final class MatrixProducts {
    /** libtorch's GEMM in the operands' dtype. */
    static final MatrixProducts LIBTORCH = new MatrixProducts(false);

    private final boolean widen;
    /** Float32 scratch for {@code a}, {@code b} and the product; null until first used. */
    private final Tensor[] scratch = new Tensor[3];

    private MatrixProducts(boolean widen) {
        this.widen = widen;
    }

    /** Products that widen bfloat16 operands to float32; one instance per workspace, since it keeps scratch. */
    static MatrixProducts widening() {
        return new MatrixProducts(true);
    }

    /**
     * The products for tensors like {@code x}: {@link #widening()} for bfloat16 on the CPU where the native kernels
     * run their AVX2 variant, else {@link #LIBTORCH}.
     */
    static MatrixProducts forTensorsLike(Tensor x) {
        boolean bfloat16OnCpu = x.scalar_type().value == ScalarType.BFloat16.value && x.device().is_cpu();
        // Only bfloat16 on the CPU asks the probe, so that other dtypes and devices never load the native library.
        return bfloat16OnCpu && NativeKernels.variant().filter(v -> v == NativeKernels.Variant.AVX2).isPresent()
                ? widening() : LIBTORCH;
    }

    /** Whether these products widen bfloat16 operands to float32. */
    boolean widens() {
        return widen;
    }

    /**
     * {@code out = a·b}, as {@code mm} for 2-D operands and {@code bmm} for 3-D ones.
     *
     * @param out the destination, not overlapping {@code a} or {@code b}
     * @param a   the left operand (any strides)
     * @param b   the right operand (any strides, e.g. {@code a}'s transpose)
     */
    void multiply(Tensor out, Tensor a, Tensor b) {
        if (!widen || a.scalar_type().value != ScalarType.BFloat16.value) {
            gemm(out, a, b);
            return;
        }
        Tensor wideA = floatCopy(0, a);
        Tensor wideB = floatCopy(1, b);
        Tensor wideOut = floatBuffer(2, out.sizes().vec().get());
        gemm(wideOut, wideA, wideB);
        out.copy_(wideOut);
    }

    private static void gemm(Tensor out, Tensor a, Tensor b) {
        if (a.dim() == 3) {
            torch.bmm_out(out, a, b);
        } else {
            torch.mm_out(out, a, b);
        }
    }

    private Tensor floatCopy(int slot, Tensor t) {
        Tensor wide = floatBuffer(slot, t.sizes().vec().get());
        wide.copy_(t);
        return wide;
    }

    /** A contiguous float32 view of {@code shape} on scratch slot {@code slot}, grown if it is too small. */
    private Tensor floatBuffer(int slot, long[] shape) {
        long numel = 1;
        for (long side : shape) {
            numel *= side;
        }
        if (scratch[slot] == null || scratch[slot].numel() < numel) {
            if (scratch[slot] != null) {
                scratch[slot].close();
            }
            scratch[slot] = NativeLifetime.outliveScope(torch.empty(new long[]{Math.max(numel, 1)},
                    new TensorOptions(ScalarType.Float), null));
        }
        return scratch[slot].narrow(0, 0, numel).view(shape);
    }
}
