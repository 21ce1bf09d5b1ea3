package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * muon-core's float32 symmetric Newton–Schulz iteration on {@link BufferKernels}, for direct buffers: what
 * {@code NewtonSchulz} runs on libtorch's CPU tensors with the native kernels ({@code BlasKernels.symmetric} over
 * {@code NativeFloat32Products}), step for step:
 * <pre>
 *   X = G / max(s·‖G‖_F, eps)            G transposed when taller than wide; the norm summed in double
 *   repeat:  A = X·Xᵀ                     half product, both triangles written
 *            B = a·I + b·A + c·A·A        in the same kind of pass
 *            X = B·X                      B exactly symmetric
 * </pre>
 * The result is the wide {@code X}: the caller transposes it back for a tall input. Holds its workspace, made for the
 * largest shape so far and reused; use one from one thread at a time.
 *
 * <pre>{@code
 * BufferNewtonSchulz ns = new BufferNewtonSchulz();
 * ByteBuffer x = ns.orthogonalize(g, 768, 3072, steps, 1.0, 1e-7, threads);   // 768 x 3072, valid until the next call
 * }</pre>
 */
public final class BufferNewtonSchulz {
    static {
        // As every public type of the API: see TorchNatives (without JavaCPP, as in muon-djl, it does nothing).
        TorchNatives.extract();
    }

    private ByteBuffer x;
    private ByteBuffer y;
    private ByteBuffer a;
    private ByteBuffer b;
    private ByteBuffer packed;

    /** An iteration with an empty workspace. */
    public BufferNewtonSchulz() {
    }

    /**
     * Orthogonalizes a row-major float32 matrix.
     *
     * @param g        the matrix, {@code rows·cols} floats in a direct buffer of native order; never written
     * @param rows     its rows
     * @param cols     its columns
     * @param steps    each step's coefficients {@code (a, b, c)}, in order
     * @param safety   the normalisation's factor on the norm
     * @param eps      the normalisation's smallest denominator
     * @param threads  the OpenMP threads the products use
     * @return the wide result, {@code min(rows, cols) × max(rows, cols)} floats from position 0: this iteration's
     *         workspace, valid until its next call
     * @throws UnsupportedOperationException if the native kernels do not run here
     * @throws IllegalArgumentException      if {@code g} is not such a buffer, or a size is not positive
     */
    public ByteBuffer orthogonalize(ByteBuffer g, int rows, int cols, float[][] steps, double safety, double eps,
                                    int threads) {
        Objects.requireNonNull(g, "g must not be null");
        BufferKernels.ensureAvailable();
        if (rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("rows and cols must be > 0, got " + rows + " and " + cols);
        }
        boolean tall = rows > cols;
        int m = Math.min(rows, cols);
        int n = Math.max(rows, cols);
        ensureWorkspace(m, n);
        BufferKernels.normalize(g, m, n, tall, x, packed, threads, safety, eps);
        ByteBuffer current = x;
        ByteBuffer next = y;
        for (float[] c : steps) {
            BufferKernels.selfProduct(current, m, n, a, packed, threads);
            BufferKernels.polynomial(a, m, b, packed, threads, c[0], c[1], c[2]);
            BufferKernels.symmetricTimes(b, current, m, n, next, packed, threads);
            ByteBuffer done = current;
            current = next;
            next = done;
        }
        return current.duplicate().clear().limit(m * n * Float.BYTES).slice().order(current.order());
    }

    /** Buffers for an {@code m × n} iteration, grown, never shrunk. */
    private void ensureWorkspace(int m, int n) {
        long matrix = (long) m * n * Float.BYTES;
        long square = (long) m * m * Float.BYTES;
        long scratch = Math.max(BufferKernels.packBytes(m, n), BufferKernels.packBytes(m, m));
        if (x == null || x.capacity() < matrix) {
            x = BufferKernels.allocate(matrix);
            y = BufferKernels.allocate(matrix);
        }
        if (a == null || a.capacity() < square) {
            a = BufferKernels.allocate(square);
            b = BufferKernels.allocate(square);
        }
        if (packed == null || packed.capacity() < scratch) {
            packed = BufferKernels.allocate(scratch);
        }
    }
}
