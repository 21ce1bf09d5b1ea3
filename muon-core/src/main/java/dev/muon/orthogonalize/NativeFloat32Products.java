package dev.muon.orthogonalize;

import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Objects;

/**
 * The float32 products of the symmetric and Gram kernels on muon-core's native kernels ({@link NativeKernels},
 * {@code muon_f32_kernels.c}), in one of their variants, for one CPU workspace: the half product {@code x·xᵀ},
 * the Newton–Schulz polynomial {@code a·I + b·s + c·s·s} formed with it, {@code l·r} (as a half product where
 * {@code l} and {@code r} commute), and the normalisation before them. Every result is written whole (both
 * triangles of the symmetric ones, exactly symmetric), and its bits do not depend on the thread count.
 *
 * <p>Why not OpenBLAS, which the kernels used before: its {@code ssyrk} takes about 0.65 of its {@code sgemm}'s time
 * for half the multiply-adds where ours takes about 0.55, and every pass of an iteration here runs on libtorch's
 * OpenMP pool, so no second pool's spinning threads wait between the passes (docs/benchmarks.md).
 *
 * <p>Empty operands never reach the kernels (an empty tensor has no data pointer): an empty result is left as
 * it is, and a product over an empty inner dimension is zero.
 *
 * <p>As {@link CpuProducts}, every symmetric result is whole, so {@link #completeLower} has nothing to do.
 *
 * <p>Holds the packing scratch, grown to the largest call so far; use it from one thread at a time, as the
 * workspace it serves.
 */
final class NativeFloat32Products implements CpuProducts {
    private final NativeKernels.Variant variant;
    private final PackingScratch scratch = new PackingScratch();

    /**
     * @param variant the kernels' variant: {@link NativeKernels#variant()}, or in tests any this CPU runs
     */
    NativeFloat32Products(NativeKernels.Variant variant) {
        this.variant = Objects.requireNonNull(variant, "variant must not be null");
    }

    @Override
    public void gram(Tensor out, Tensor x) {
        selfProduct(out, x, false);
    }

    /** {@code s·sᵀ}, packing {@code s} as the exactly symmetric matrix it is. */
    @Override
    public void square(Tensor out, Tensor s) {
        selfProduct(out, s, true);
    }

    @Override
    public void completeLower(Tensor s) {
        // Both triangles are written already.
    }

    @Override
    public void symmetricTimes(Tensor out, Tensor s, Tensor b) {
        times(out, s, true, b);
    }

    @Override
    public void times(Tensor out, Tensor l, Tensor r) {
        times(out, l, false, r);
    }

    /** {@code out = x·xᵀ}; {@code symmetricX} says {@code x} is exactly symmetric, which packs it faster. */
    void selfProduct(Tensor out, Tensor x, boolean symmetricX) {
        int m = rows(x);
        int k = Math.toIntExact(x.size(1));
        require(x, m, k);
        require(out, m, m);
        requireApart(out, x);
        if (emptyResult(out, k)) {
            return;
        }
        NativeKernels.float32SelfProduct(variant.code, x.data_ptr().address(), m, k, symmetricX,
                out.data_ptr().address(), scratchFor(m, k), threads());
    }

    /** {@code out = a·I + b·s + c·s·s} for the exactly symmetric {@code s}, both triangles. */
    @Override
    public void polynomial(Tensor out, Tensor s, Coefficients c) {
        int m = rows(s);
        require(s, m, m);
        require(out, m, m);
        requireApart(out, s);
        if (m == 0) {
            return;
        }
        NativeKernels.float32Polynomial(variant.code, s.data_ptr().address(), m, out.data_ptr().address(),
                scratchFor(m, m), threads(), (float) c.a(), (float) c.b(), (float) c.c());
    }

    /** {@code out = l·r} for the square {@code l}; {@code leftSymmetric} says {@code l} is exactly symmetric. */
    void times(Tensor out, Tensor l, boolean leftSymmetric, Tensor r) {
        product(out, l, leftSymmetric, r, false);
    }

    /**
     * {@code out = s·t} for the exactly symmetric {@code s} and a square {@code t} that commutes with it (in the
     * Gram iteration both are polynomials in one Gram matrix, so the product is symmetric in exact arithmetic):
     * the upper triangle only, about half the multiply-adds, mirrored, so the result is exactly symmetric.
     */
    @Override
    public void commutingTimes(Tensor out, Tensor s, Tensor t) {
        product(out, s, true, t, true);
    }

    private void product(Tensor out, Tensor l, boolean leftSymmetric, Tensor r, boolean symmetricOut) {
        int m = rows(l);
        int n = symmetricOut ? m : Math.toIntExact(r.size(1));
        require(l, m, m);
        require(r, m, n);
        require(out, m, n);
        requireApart(out, l);
        requireApart(out, r);
        if (emptyResult(out, m)) {
            return;
        }
        NativeKernels.float32Times(variant.code, l.data_ptr().address(), leftSymmetric, r.data_ptr().address(), m,
                n, symmetricOut, out.data_ptr().address(), scratchFor(m, n), threads());
    }

    /**
     * {@code out = g / max(safety·‖g‖_F, eps)} for the wide {@code out}; {@code g} is of its shape or, with
     * {@code transposed}, of the transposed one (a tall input, read transposed).
     */
    @Override
    public void normalize(Tensor out, Tensor g, boolean transposed, double safety, double eps) {
        int m = rows(out);
        int n = Math.toIntExact(out.size(1));
        require(out, m, n);
        require(g, transposed ? n : m, transposed ? m : n);
        requireApart(out, g);
        if (out.numel() == 0) {
            return;
        }
        NativeKernels.float32Normalize(variant.code, g.data_ptr().address(), m, n, transposed,
                out.data_ptr().address(), scratchFor(m, n), threads(), safety, eps);
    }

    /**
     * Whether the product into {@code out} over an {@code inner}-long dimension is done without the kernels: an
     * empty {@code out} (nothing to write), or an empty inner dimension (the product is zero, written here).
     */
    private static boolean emptyResult(Tensor out, int inner) {
        if (out.numel() == 0) {
            return true;
        }
        if (inner == 0) {
            out.zero_();
            return true;
        }
        return false;
    }

    /** The OpenMP threads a call uses: what OpenBLAS would have been given ({@link OpenBlas#followTorchThreads}). */
    private static int threads() {
        return CpuContention.threadsFor(torch.get_num_threads());
    }

    private static int rows(Tensor t) {
        return Math.toIntExact(t.size(0));
    }

    private static void require(Tensor t, int rows, int cols) {
        // The kernels read and write raw memory: a view or another dtype here would be a bug in the caller, not
        // bad input.
        if (t.dim() != 2 || t.size(0) != rows || t.size(1) != cols || !t.is_contiguous() || !t.device().is_cpu()
                || t.scalar_type().value != ScalarType.Float.value) {
            throw new IllegalStateException("the native float32 products need contiguous " + rows + "x" + cols
                    + " float32 CPU tensors, got " + t.size(0) + "x" + t.size(-1) + " " + t.scalar_type()
                    + " (contiguous: " + t.is_contiguous() + ")");
        }
    }

    private static void requireApart(Tensor out, Tensor operand) {
        if (out.numel() == 0 || operand.numel() == 0) {
            return; // no memory to share
        }
        long o = out.data_ptr().address();
        long p = operand.data_ptr().address();
        if (o < p + operand.nbytes() && p < o + out.nbytes()) {
            throw new IllegalStateException("the native float32 products write out beside their operands, not "
                    + "over them");
        }
    }

    /** The packing scratch's address for an {@code m × n} call. */
    private long scratchFor(int m, int n) {
        return scratch.address(NativeKernels.float32PackBytes(variant.code, m, n));
    }
}
