package dev.muon.orthogonalize;

import org.bytedeco.pytorch.Tensor;

/**
 * The symmetric and Gram Newton–Schulz kernels on the CPU, for one workspace in float32 or float64, over one set of
 * {@link CpuProducts} chosen when it is made: muon-core's native float32 kernels where they run
 * ({@link NativeFloat32Products}: every product, and the normalisation, on libtorch's OpenMP pool, no OpenBLAS call
 * at all), OpenBLAS otherwise ({@link OpenBlasProducts}: every pass of the iteration, elementwise ones included, an
 * OpenBLAS call; see {@link OpenBlas} for why). Each returns the buffer holding the result; the workspace's
 * {@code x} holds the normalised wide input on entry.
 *
 * <p>The symmetric step, for {@code X} of shape {@code m × n} and the step's coefficients {@code (a, b, c)}:
 * <pre>
 *   A = X·Xᵀ (syrk, upper, then mirrored);  B_up = c·A·Aᵀ + b·A (syrk, beta = b);  B += a·I;
 *   X' = B·X (symm, reading B's upper triangle)
 * </pre>
 * for {@code m²(3n + m)} multiply-adds against {@code m²(4n + 2m)} for the plain step; natively the same algebra,
 * with both triangles of each symmetric result written by the kernel. The Gram kernel is described at
 * {@link #gram}.
 *
 * <p>The plain kernel is not here: it stays on libtorch so that a matrix gives the same bits alone and inside a
 * same-shape batch ({@code bmm}).
 */
final class BlasKernels {
    private final Workspace ws;
    private final CpuProducts products;

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
        this.products = nativeFloat32 != null && !float64 ? new NativeFloat32Products(nativeFloat32)
                : new OpenBlasProducts(float64, ws.x);
    }

    /** Whether the products run on the native float32 kernels. */
    boolean isNative() {
        return products instanceof NativeFloat32Products;
    }

    /**
     * Writes the normalised input into the workspace's {@code x} if the products can read {@code update} directly
     * (contiguous, of the iteration's dtype), and says whether it did; otherwise the caller normalises on libtorch.
     * Natively the norm is summed in double, as OpenBLAS's {@code snrm2} does, on the OpenMP pool the products use
     * (OpenBLAS's pool would wake up once per call and alternate with it): libtorch's float32 norm measured up to
     * 7x the error against float64 after five steps (docs/benchmarks.md).
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
        products.normalize(ws.x, update, tall, config.nsCoefficients().normalizationSafety(), config.eps());
        return true;
    }

    /** The symmetric iteration: half of {@code X·Xᵀ} and of {@code A·A}, then a symmetric product. */
    Tensor symmetric(NewtonSchulzConfig config) {
        return symmetric(config, null);
    }

    /**
     * {@link #symmetric(NewtonSchulzConfig)} with a preconditioning of the first Gram matrix and the input, called
     * as {@code precondition.accept(A, X)} right after the first {@code A = X·Xᵀ} (AOL).
     */
    Tensor symmetric(NewtonSchulzConfig config, java.util.function.BiConsumer<Tensor, Tensor> precondition) {
        Tensor x = ws.x;
        Tensor next = ws.y;
        for (int k = 0; k < config.nsSteps(); k++) {
            Coefficients c = config.nsCoefficients().at(k);
            products.gram(ws.a, x);
            if (k == 0 && precondition != null) {
                precondition.accept(ws.a, x);
            }
            products.polynomial(ws.b, ws.a, c);
            products.symmetricTimes(next, ws.b, x);
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
     * matrix, so it is symmetric in exact arithmetic (float32: the error against float64 within 1.14x of the full
     * product's on four spectra, docs/benchmarks.md).
     */
    Tensor gram(NewtonSchulzConfig config) {
        return gram(config, null);
    }

    /** {@link #gram(NewtonSchulzConfig)} with a preconditioning of the first Gram matrix and the input. */
    Tensor gram(NewtonSchulzConfig config, java.util.function.BiConsumer<Tensor, Tensor> precondition) {
        GramSchedule.Products<Tensor> steps = new GramSchedule.Products<>() {
            @Override
            public void gram(Tensor out, Tensor x) {
                products.gram(out, x);
            }

            @Override
            public void polynomial(Tensor z, Tensor r, int k, Tensor scratch) {
                products.polynomial(z, r, config.nsCoefficients().at(k));
                products.completeLower(z);
            }

            @Override
            public void symmetricTimes(Tensor out, Tensor s, Tensor b) {
                products.commutingTimes(out, s, b);
            }

            @Override
            public void squareTimes(Tensor out, Tensor z, Tensor r, Tensor scratch) {
                products.square(scratch, z);
                products.commutingTimes(out, scratch, r);
            }

            @Override
            public void times(Tensor out, Tensor q, Tensor x) {
                products.times(out, q, x);
            }
        };
        return GramIteration.run(steps, config.nsSteps(), ws, precondition);
    }
}
