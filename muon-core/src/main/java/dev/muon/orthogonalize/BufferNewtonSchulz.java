package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.Objects;

/**
 * muon-core's float32 Newton–Schulz iterations on {@link BufferKernels}, for direct buffers: what
 * {@code NewtonSchulz} runs on libtorch's CPU tensors with the native kernels ({@code BlasKernels} over
 * {@code NativeFloat32Products}), product for product, so the same input gives the same bits. Both start from
 * <pre>
 *   X = G / max(s·‖G‖_F, eps)            G transposed when taller than wide; the norm summed in double
 * </pre>
 * {@link #symmetric}, each step:
 * <pre>
 *   A = X·Xᵀ                              half product, both triangles written
 *   B = a·I + b·A + c·A·A                 in the same kind of pass
 *   X = B·X                               B exactly symmetric
 * </pre>
 * {@link #gram}: the same steps on the {@code m × m} Gram matrix ({@code GramSchedule}, the schedule muon-core's
 * Gram kernel runs), touching the long side only at the start, at the restart and at the end: fewer multiply-adds the
 * longer the matrix ({@code (3a + 10)·m³} against {@code (7.5a + 2.5)·m³} for 5 steps at {@code n = a·m}).
 *
 * <p>The result is the wide {@code X}: the caller transposes it back for a tall input. Holds its workspace, made for
 * the largest shape so far and reused; use one from one thread at a time.
 *
 * <pre>{@code
 * BufferNewtonSchulz ns = new BufferNewtonSchulz();
 * ByteBuffer x = ns.gram(g, 768, 3072, steps, 1.0, 1e-7, threads, NsPreconditioning.FROBENIUS);
 * // x: 768 x 3072, valid until the next call
 * }</pre>
 */
public final class BufferNewtonSchulz {
    static {
        // As every public type of the API: see TorchNatives (without JavaCPP, as in muon-djl, it does nothing).
        TorchNatives.extract();
    }

    private ByteBuffer x;
    private ByteBuffer y;
    /** The square buffers: the symmetric iteration uses the first two, the Gram iteration all six. */
    private final ByteBuffer[] squares = new ByteBuffer[6];
    private ByteBuffer packed;

    /** An iteration with an empty workspace. */
    public BufferNewtonSchulz() {
    }

    /**
     * Orthogonalizes a row-major float32 matrix with the symmetric iteration. With {@link NsPreconditioning#AOL} the
     * input is not normalized ({@code safety} unused) and AOL's rescaling ({@link #aolRescale}) runs between the
     * first {@code A = X·Xᵀ} and its polynomial, as muon-core's {@code NewtonSchulz} runs it.
     *
     * @param g                 the matrix, {@code rows·cols} floats in a direct buffer of native order; never written
     * @param rows              its rows
     * @param cols              its columns
     * @param steps             each step's coefficients {@code (a, b, c)}, in order
     * @param safety            the normalisation's factor on the norm (Frobenius only)
     * @param eps               the normalisation's smallest denominator; with AOL, the floor of the row sums
     * @param threads           the OpenMP threads the products use
     * @param preconditioning   how the input is scaled
     * @return the wide result, {@code min(rows, cols) × max(rows, cols)} floats from position 0: this iteration's
     *         workspace, valid until its next call
     * @throws UnsupportedOperationException if the native kernels do not run here
     * @throws IllegalArgumentException      if {@code g} is not such a buffer, a size is not positive, a step does not
     *                                       hold 3 coefficients, {@code threads} is below 1, {@code eps} is not a
     *                                       finite number {@code > 0}, or (Frobenius) {@code safety} not one
     *                                       {@code >= 1}; nothing is computed then
     * @throws NullPointerException          if {@code g}, {@code steps} or {@code preconditioning} is null
     */
    public ByteBuffer symmetric(ByteBuffer g, int rows, int cols, float[][] steps, double safety, double eps,
                                int threads, NsPreconditioning preconditioning) {
        boolean aol = aol(preconditioning);
        int m = prepare(g, rows, cols, steps, safety, eps, threads, 2, aol);
        int n = Math.max(rows, cols);
        ByteBuffer current = x;
        ByteBuffer next = y;
        for (int k = 0; k < steps.length; k++) {
            float[] c = steps[k];
            BufferKernels.selfProduct(current, m, n, squares[0], packed, threads);
            if (k == 0 && aol) {
                aolRescale(squares[0], current, m, n, eps);
            }
            BufferKernels.polynomial(squares[0], m, squares[1], packed, threads, c[0], c[1], c[2]);
            BufferKernels.symmetricTimes(squares[1], current, m, n, next, packed, threads);
            ByteBuffer done = current;
            current = next;
            next = done;
        }
        return result(current, m, n);
    }

    /**
     * Orthogonalizes a row-major float32 matrix with the Gram iteration. With {@link NsPreconditioning#AOL} the input
     * is not normalized and AOL's rescaling ({@link #aolRescale}) runs on the first Gram matrix and the input before
     * the schedule goes on, as muon-core's Gram kernel runs it. The other arguments, the result and the exceptions are those of
     * {@link #symmetric(ByteBuffer, int, int, float[][], double, double, int, NsPreconditioning)}.
     *
     * @param preconditioning how the input is scaled
     * @return the wide result, valid until this iteration's next call
     */
    public ByteBuffer gram(ByteBuffer g, int rows, int cols, float[][] steps, double safety, double eps,
                           int threads, NsPreconditioning preconditioning) {
        boolean aol = aol(preconditioning);
        int m = prepare(g, rows, cols, steps, safety, eps, threads, squares.length, aol);
        int n = Math.max(rows, cols);
        GramSchedule.Products<ByteBuffer> products = new GramSchedule.Products<>() {
            @Override
            public void gram(ByteBuffer out, ByteBuffer source) {
                BufferKernels.selfProduct(source, m, n, out, packed, threads);
            }

            @Override
            public void polynomial(ByteBuffer z, ByteBuffer r, int k, ByteBuffer scratch) {
                float[] c = steps[k];
                BufferKernels.polynomial(r, m, z, packed, threads, c[0], c[1], c[2]);
            }

            @Override
            public void symmetricTimes(ByteBuffer out, ByteBuffer s, ByteBuffer b) {
                BufferKernels.commutingTimes(s, b, m, out, packed, threads);
            }

            @Override
            public void squareTimes(ByteBuffer out, ByteBuffer z, ByteBuffer r, ByteBuffer scratch) {
                BufferKernels.square(z, m, scratch, packed, threads);
                BufferKernels.commutingTimes(scratch, r, m, out, packed, threads);
            }

            @Override
            public void times(ByteBuffer out, ByteBuffer q, ByteBuffer source) {
                BufferKernels.times(q, source, m, n, out, packed, threads);
            }
        };
        ByteBuffer out = GramSchedule.run(products, steps.length, new GramSchedule.Buffers<>(x, y, squares),
                aol ? (a, source) -> aolRescale(a, source, m, n, eps) : null);
        return result(out, m, n);
    }

    private static boolean aol(NsPreconditioning preconditioning) {
        return Objects.requireNonNull(preconditioning, "preconditioning must not be null") == NsPreconditioning.AOL;
    }

    /**
     * AOL's rescaling of the first Gram matrix {@code A = X·Xᵀ} (both triangles) and the wide input {@code X}, in
     * place: {@code sᵢ = 1/√max(Σⱼ|Aᵢⱼ|, eps)}, {@code X ← diag(s)·X}, {@code A ← diag(s)·A·diag(s)}, each product
     * in float32 as muon-core's {@code NewtonSchulz} forms it on tensors (its row sums are summed in double here, then
     * rounded to float32, so a sum may differ from libtorch's in its last bit).
     */
    static void aolRescale(ByteBuffer a, ByteBuffer x, int m, int n, double eps) {
        FloatBuffer gram = a.duplicate().order(a.order()).clear().asFloatBuffer();
        FloatBuffer wide = x.duplicate().order(x.order()).clear().asFloatBuffer();
        float floor = (float) eps;
        float[] scale = new float[m];
        for (int i = 0; i < m; i++) {
            double sum = 0;
            for (int j = 0; j < m; j++) {
                sum += Math.abs(gram.get(i * m + j));
            }
            scale[i] = (float) (1.0 / Math.sqrt(Math.max((float) sum, floor)));
        }
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                int at = i * n + j;
                wide.put(at, wide.get(at) * scale[i]);
            }
            for (int j = 0; j < m; j++) {
                int at = i * m + j;
                gram.put(at, gram.get(at) * (scale[i] * scale[j]));
            }
        }
    }

    /**
     * Checks the arguments, makes the workspace ready with {@code squareCount} square buffers, and writes the wide
     * input into {@code x}: normalised, or as it is for AOL (the kernel's denominator is then
     * {@code max(0·‖G‖, 1) = 1}, which copies {@code G} exactly).
     *
     * @return the short side {@code m}
     */
    private int prepare(ByteBuffer g, int rows, int cols, float[][] steps, double safety, double eps, int threads,
                        int squareCount, boolean aol) {
        Objects.requireNonNull(g, "g must not be null");
        Objects.requireNonNull(steps, "steps must not be null");
        BufferKernels.ensureAvailable();
        if (rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("rows and cols must be > 0, got " + rows + " and " + cols);
        }
        for (int k = 0; k < steps.length; k++) {
            if (steps[k] == null || steps[k].length != 3) {
                throw new IllegalArgumentException("steps[" + k + "] must hold the 3 coefficients (a, b, c), got "
                        + (steps[k] == null ? "null" : steps[k].length + " numbers"));
            }
        }
        // The kernels' OpenMP regions take the count as it is: 0 or less is undefined there.
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        if (!(eps > 0) || !Double.isFinite(eps)) {
            throw new IllegalArgumentException("eps must be a finite number > 0, got " + eps);
        }
        if (!aol && !(safety >= 1 && Double.isFinite(safety))) {
            throw new IllegalArgumentException("safety must be a finite number >= 1, got " + safety);
        }
        int m = Math.min(rows, cols);
        int n = Math.max(rows, cols);
        ensureWorkspace(m, n, squareCount);
        BufferKernels.normalize(g, m, n, rows > cols, x, packed, threads, aol ? 0.0 : safety, aol ? 1.0 : eps);
        return m;
    }

    private static ByteBuffer result(ByteBuffer wide, int m, int n) {
        return wide.duplicate().clear().limit(m * n * Float.BYTES).slice().order(wide.order());
    }

    /** Buffers for an {@code m × n} iteration, grown, never shrunk. */
    private void ensureWorkspace(int m, int n, int squareCount) {
        long matrix = (long) m * n * Float.BYTES;
        long square = (long) m * m * Float.BYTES;
        long scratch = Math.max(BufferKernels.packBytes(m, n), BufferKernels.packBytes(m, m));
        if (x == null || x.capacity() < matrix) {
            x = BufferKernels.allocate(matrix);
            y = BufferKernels.allocate(matrix);
        }
        for (int i = 0; i < squareCount; i++) {
            if (squares[i] == null || squares[i].capacity() < square) {
                squares[i] = BufferKernels.allocate(square);
            }
        }
        if (packed == null || packed.capacity() < scratch) {
            packed = BufferKernels.allocate(scratch);
        }
    }
}
