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
 * <p>In float32, where muon-core's native kernels run ({@link NativeKernels}), every product runs on them instead
 * ({@link NativeFloat32Products}): the same algebra, with both triangles of each symmetric result written by the
 * kernel, and the normalisation, all on libtorch's OpenMP pool: no OpenBLAS call at all.
 *
 * <p>The plain kernel is not here: it stays on libtorch so that a matrix gives the same bits alone and inside a
 * same-shape batch ({@code bmm}).
 */
final class BlasKernels {
    private final OpenBlas blas;
    private final Workspace ws;
    private final Tensor ones;
    /** The float32 products on muon-core's native kernels where they run (null: every product on OpenBLAS). */
    private final NativeFloat32Products nativeProducts;

    /**
     * Prepares the kernels for the workspace's shape.
     *
     * @param ws            the buffers
     * @param float64       the iteration's dtype: float64, or float32
     * @param nativeFloat32 in float32, the variant of muon-core's native kernels on which the products run
     *                      ({@link NativeFloat32Products}), the normalisation included; null: on OpenBLAS
     */
    BlasKernels(Workspace ws, boolean float64, NativeKernels.Variant nativeFloat32) {
        this.ws = ws;
        this.blas = new OpenBlas(float64);
        this.ones = NativeLifetime.outliveScope(torch.ones(new long[]{ws.x.size(0)}, ws.x.options()));
        this.nativeProducts = nativeFloat32 != null && !float64 ? new NativeFloat32Products(nativeFloat32) : null;
    }

    /** Whether the products run on the native float32 kernels. */
    boolean isNative() {
        return nativeProducts != null;
    }

    /**
     * Writes the normalised input into the workspace's {@code x} if OpenBLAS, or the native float32 kernels, can
     * read {@code update} directly (contiguous, of the iteration's dtype), and says whether it did; otherwise the
     * caller normalises on libtorch.
     *
     * @param update the input as given (tall inputs are read transposed)
     * @param tall   whether {@code update} has more rows than columns
     */
    boolean normalize(Tensor update, boolean tall, NewtonSchulzConfig config) {
        // Every iteration here starts here: the one place to bring OpenBLAS's pool to libtorch's size (libtorch's
        // own float32 GEMMs use that pool too, whichever products run here).
        OpenBlas.followTorchThreads();
        if (!update.is_contiguous() || update.scalar_type().value != ws.x.scalar_type().value) {
            return false;
        }
        if (nativeProducts != null) {
            // On the OpenMP pool the products use (OpenBLAS's pool would wake up once per call and alternate with
            // it), with the norm summed in double as OpenBLAS's snrm2 does: libtorch's float32 norm measured up to
            // 7x the error against float64 after five steps (docs/benchmarks.md).
            nativeProducts.normalize(ws.x, update, tall, config.nsCoefficients().normalizationSafety(),
                    config.eps());
            return true;
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
            polynomial(ws.b, ws.a, c);
            symmetricTimes(next, ws.b, x);
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
     * and the long side only in the Gram matrices and the products {@code Q·X_r} (gemm). Natively the same, with
     * {@code Z·Q} and {@code Z²·R} formed as half products too: each is a product of two polynomials in one Gram
     * matrix, so it is symmetric in exact arithmetic.
     */
    Tensor gram(NewtonSchulzConfig config) {
        GramIteration.Products products = new GramIteration.Products() {
            @Override
            public void gram(Tensor out, Tensor x) {
                gramOf(out, x);
            }

            @Override
            public void polynomial(Tensor z, Tensor r, int k, Tensor scratch) {
                BlasKernels.this.polynomial(z, r, config.nsCoefficients().at(k));
                if (nativeProducts == null) {
                    blas.mirrorUpper(z);
                }
            }

            @Override
            public void symmetricTimes(Tensor out, Tensor s, Tensor b) {
                commutingTimes(out, s, b);
            }

            @Override
            public void squareTimes(Tensor out, Tensor z, Tensor r, Tensor scratch) {
                if (nativeProducts != null) {
                    nativeProducts.selfProduct(scratch, z, true);
                } else {
                    blas.syrkUpper(1.0, z, 0.0, scratch);
                }
                commutingTimes(out, scratch, r);
            }

            /**
             * {@code out = s·b} for commuting {@code s} and {@code b}: natively as a half product (float32: the
             * error against float64 within 1.14x of the full product's on four spectra, docs/benchmarks.md), on
             * OpenBLAS as {@code ?symm}.
             */
            private void commutingTimes(Tensor out, Tensor s, Tensor b) {
                if (nativeProducts != null) {
                    nativeProducts.commutingTimes(out, s, b);
                } else {
                    blas.symmUpperTimes(s, b, out);
                }
            }

            @Override
            public void times(Tensor out, Tensor q, Tensor x) {
                if (nativeProducts != null) {
                    nativeProducts.times(out, q, false, x);
                } else {
                    blas.gemm(q, x, out);
                }
            }
        };
        return GramIteration.run(products, config.nsSteps(), ws);
    }

    /** {@code out = x·xᵀ}, both triangles. */
    private void gramOf(Tensor out, Tensor x) {
        if (nativeProducts != null) {
            nativeProducts.selfProduct(out, x, false);
            return;
        }
        blas.syrkUpper(1.0, x, 0.0, out);
        blas.mirrorUpper(out);
    }

    /**
     * {@code out = c·A² + b·A + a·I} for the symmetric {@code A}: both triangles natively, the upper one on OpenBLAS
     * (one syrk).
     */
    private void polynomial(Tensor out, Tensor gram, Coefficients c) {
        if (nativeProducts != null) {
            nativeProducts.polynomial(out, gram, c);
            return;
        }
        blas.copy(gram, out);
        blas.syrkUpper(c.c(), gram, c.b(), out);
        blas.addToDiagonal(out, c.a(), ones);
    }

    /** {@code out = s·b} for the symmetric {@code s} (whose upper triangle is all OpenBLAS reads). */
    private void symmetricTimes(Tensor out, Tensor s, Tensor b) {
        if (nativeProducts != null) {
            nativeProducts.times(out, s, true, b);
        } else {
            blas.symmUpperTimes(s, b, out);
        }
    }
}
