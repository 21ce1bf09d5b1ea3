package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The symmetric and Gram Newton–Schulz kernels on OpenBLAS, for one CPU workspace in float32 or float64: every
 * pass of the iteration, elementwise ones included, is an OpenBLAS call (see {@link OpenBlas} for why). Each
 * returns the buffer holding the result; the workspace's {@code x} holds the normalised wide input on entry.
 *
 * <p>The symmetric step, for {@code X} of shape {@code m × n} and the step's coefficients {@code (a, b, c)}:
 * <pre>
 *   A = X·Xᵀ (syrk, upper, then mirrored);  B_up = c·A·Aᵀ + b·A (syrk, beta = b);  B += a·I;
 *   X' = B·X (symm, reading B's upper triangle)
 * </pre>
 * for {@code m²(3n + m)} multiply-adds against {@code m²(4n + 2m)} for the plain step. The Gram kernel is
 * described at {@link #gram}.
 *
 * <p>The plain kernel is not here: it stays on libtorch so that a matrix gives the same bits alone and inside a
 * same-shape batch ({@code bmm}).
 */
final class BlasKernels {
    private final OpenBlas blas;
    private final Workspace ws;
    private final Tensor ones;

    BlasKernels(Workspace ws, boolean float64) {
        this.ws = ws;
        this.blas = new OpenBlas(float64);
        this.ones = NativeLifetime.outliveScope(torch.ones(new long[]{ws.x.size(0)}, ws.x.options()));
    }

    /**
     * Writes the normalised input into the workspace's {@code x} if OpenBLAS can read {@code update} directly
     * (contiguous, of the iteration's dtype), and says whether it did; otherwise the caller normalises on libtorch.
     *
     * @param update the input as given (tall inputs are read transposed)
     * @param tall   whether {@code update} has more rows than columns
     */
    boolean normalize(Tensor update, boolean tall, NewtonSchulzConfig config) {
        // Every OpenBLAS iteration starts here: the one place to bring OpenBLAS's pool to libtorch's size.
        OpenBlas.followTorchThreads();
        if (!update.is_contiguous() || update.scalar_type().value != ws.x.scalar_type().value) {
            return false;
        }
        blas.normalizeInto(ws.x, update, tall, config.nsCoefficients().normalizationSafety(), config.eps());
        return true;
    }

    /** The symmetric iteration: half of {@code X·Xᵀ} and of {@code A·A}, then a symmetric product. */
    Tensor symmetric(NewtonSchulzConfig config) {
        Tensor x = ws.x;
        Tensor next = ws.y;
        for (int k = 0; k < config.nsSteps(); k++) {
            Coefficients c = config.nsCoefficients().at(k);
            gramOf(ws.a, x);
            polynomialUpper(ws.b, ws.a, c);
            blas.symmUpperTimes(ws.b, x, next);
            Tensor done = x;
            x = next;
            next = done;
        }
        return x;
    }

    /**
     * Gram Newton–Schulz ({@link GramIteration} has the algebra and the restart rule) with every {@code S·Sᵀ}
     * product on {@code ?syrk}:
     * <pre>
     *   R = X_r·X_rᵀ                          syrk, mirrored
     *   Z_up = c·R·Rᵀ + b·R;  Z += a·I         syrk with beta = b onto a copy of R; Z mirrored
     *   Q' = Z·Q                              symm (Z's upper triangle)        (Q' = Z after a restart)
     *   R' = Z²·R                             syrk for Z²'s upper triangle, then symm
     * </pre>
     * and the long side only in the Gram matrices and the products {@code Q·X_r} (gemm).
     */
    Tensor gram(NewtonSchulzConfig config) {
        GramIteration.Products products = new GramIteration.Products() {
            @Override
            public void gram(Tensor out, Tensor x) {
                gramOf(out, x);
            }

            @Override
            public void polynomial(Tensor z, Tensor r, int k, Tensor scratch) {
                polynomialUpper(z, r, config.nsCoefficients().at(k));
                blas.mirrorUpper(z);
            }

            @Override
            public void symmetricTimes(Tensor out, Tensor s, Tensor b) {
                blas.symmUpperTimes(s, b, out);
            }

            @Override
            public void squareTimes(Tensor out, Tensor z, Tensor r, Tensor scratch) {
                blas.syrkUpper(1.0, z, 0.0, scratch);
                blas.symmUpperTimes(scratch, r, out);
            }

            @Override
            public void times(Tensor out, Tensor q, Tensor x) {
                blas.gemm(q, x, out);
            }
        };
        return GramIteration.run(products, config.nsSteps(), ws);
    }

    /** {@code out = x·xᵀ}, both triangles. */
    private void gramOf(Tensor out, Tensor x) {
        blas.syrkUpper(1.0, x, 0.0, out);
        blas.mirrorUpper(out);
    }

    /** The upper triangle of {@code out = c·A² + b·A + a·I} for the symmetric {@code A} (one syrk). */
    private void polynomialUpper(Tensor out, Tensor gram, Coefficients c) {
        blas.copy(gram, out);
        blas.syrkUpper(c.c(), gram, c.b(), out);
        blas.addToDiagonal(out, c.a(), ones);
    }
}
