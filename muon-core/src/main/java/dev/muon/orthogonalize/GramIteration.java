package dev.muon.orthogonalize;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Gram Newton–Schulz: the same iteration, carried out on {@code m × m} matrices for a wide {@code m × n} input.
 *
 * <p>With {@code X_k = Q_k·X_r} and {@code R_k = X_k X_kᵀ}, a step {@code X_{k+1} = Z_k·X_k} with
 * {@code Z_k = a·I + b·R_k + c·R_k²} becomes {@code Q_{k+1} = Z_k·Q_k} and {@code R_{k+1} = Z_k R_k Z_k =
 * R_k·Z_k²} ({@code Z_k} is a polynomial in {@code R_k}, so they commute). Only the Gram matrices
 * {@code X_r X_rᵀ} and the products {@code Q·X_r} touch the long dimension.
 *
 * <p>Every product of a symmetric matrix with itself ({@code X_r X_rᵀ}, {@code R_k²}, {@code Z_k²}) can be formed
 * by {@link GramProduct} at about half the multiply-adds of a GEMM, exactly symmetric; the two products of
 * commuting matrices ({@code R_k·Z_k²}, {@code Z_k·Q_k}) are plain GEMMs. {@code X_r X_rᵀ}, whose inner dimension
 * is the long side, always is; the {@code m × m} squares only from a size the caller gives, because on the CPU
 * in bfloat16 row blocks of an {@code m × m × m} product lose to one GEMM below about 1536 rows (see
 * {@link GramProduct#CPU_SQUARE_MIN_ROWS}): one GEMM for them measured 73 against 76 ms at 768 × 3072
 * and 162 against 175 ms at 1024 × 4096 (5 steps, medians of 7–9), with no larger error. Their rounding is then
 * not exactly symmetric, which the restart absorbs like any other rounding (the spectra tests hold). For 5 steps at
 * {@code n = 4m} that is about {@code 22m³} multiply-adds with true half products (OpenBLAS {@code ?syrk},
 * {@link BlasKernels#gram}, which runs instead of this class on the CPU in float32 and float64) against
 * {@code 45m³} for the plain iteration. This class is the libtorch form: bfloat16, and any device.
 *
 * <p>A restart every {@value GramSchedule#RESTART_EVERY} steps ({@code X_r = Q_k·X_r}, then a fresh Gram matrix)
 * bounds the drift between {@code R_k} and the true {@code X_k X_kᵀ} that rounding accumulates, as Dao-AILab's
 * gram-newton-schulz does. We measured where to put it for 5 steps at 512 × 2048 against the float64 iteration,
 * over Gaussian, exponentially decaying, power-law and low-rank-plus-noise spectra: after 3 steps the bfloat16
 * error is at most the plain bfloat16 kernel's (0.04–0.16 against 0.03–0.26) and float32 matches the plain
 * float32 kernel (1.1e-5–2.5e-5); after 2 steps bfloat16 is up to 4x worse on decaying spectra (0.28 against
 * 0.07); with no restart, or with {@code R} recomputed as {@code Q·R_0·Q} instead of from {@code X}, power-law
 * inputs diverge.
 */
final class GramIteration {
    private final Workspace ws;
    private final GramProduct gram;
    private final MatrixProducts fullProducts;

    /**
     * Prepares the libtorch form for the workspace's shape.
     *
     * @param ws                    the buffers, {@code x} holding the normalised input at each call
     * @param blockedSquaresMinRows the smallest {@code m} from which the {@code m × m} self products run as
     *                              {@link GramProduct}'s half products rather than one GEMM ({@code X_r X_rᵀ},
     *                              whose inner dimension is the long side, always runs as a half product)
     * @param nativeKernel          the native bfloat16 kernel's variant on which the half products run (only where
     *                              {@link GramProduct#nativeVariantFor} gives one, or in tests any this CPU runs),
     *                              the polynomial fused into {@code R_k²}; null: on row blocks of GEMMs
     * @param products              the full products ({@code Z·Q}, {@code R·Z²}, {@code Q·X} and the row blocks)
     */
    GramIteration(Workspace ws, int blockedSquaresMinRows, NativeKernels.Variant nativeKernel,
            MatrixProducts products) {
        this.ws = ws;
        this.fullProducts = products;
        gram = new GramProduct(ws.x.size(0), ws.x.options(), nativeKernel, blockedSquaresMinRows, products);
    }

    /**
     * Runs the iteration on libtorch ops on the workspace's {@code x}, which holds the normalised input, and
     * returns the buffer holding the result.
     */
    Tensor iterate(int steps, Scalar[] linear, Scalar[] cubic, Scalar[] quintic) {
        return iterate(steps, linear, cubic, quintic, null);
    }

    /**
     * {@link #iterate(int, Scalar[], Scalar[], Scalar[])} with a preconditioning of the first Gram matrix and the
     * input ({@link GramSchedule#run(GramSchedule.Products, int, GramSchedule.Buffers, java.util.function.BiConsumer)}).
     */
    Tensor iterate(int steps, Scalar[] linear, Scalar[] cubic, Scalar[] quintic,
                   java.util.function.BiConsumer<Tensor, Tensor> precondition) {
        GramSchedule.Products<Tensor> products = new GramSchedule.Products<>() {
            @Override
            public void gram(Tensor out, Tensor x) {
                gram.into(out, x);
            }

            @Override
            public void polynomial(Tensor z, Tensor r, int k, Tensor scratch) {
                gram.polynomialInto(z, r, scratch, linear[k], cubic[k], quintic[k]);
            }

            @Override
            public void symmetricTimes(Tensor out, Tensor s, Tensor b) {
                fullProducts.multiply(out, s, b);
            }

            @Override
            public void squareTimes(Tensor out, Tensor z, Tensor r, Tensor scratch) {
                gram.squareInto(scratch, z);
                fullProducts.multiply(out, r, scratch);
            }

            @Override
            public void times(Tensor out, Tensor q, Tensor x) {
                fullProducts.multiply(out, q, x);
            }
        };
        return run(products, steps, ws, precondition);
    }

    /**
     * The iteration on libtorch's tensors, for either set of products: {@code x} holds the normalised wide input on
     * entry, and the result is returned in {@code ws.x} or {@code ws.y}. Besides {@code ws.a}, {@code ws.t} and
     * {@code ws.b} it uses {@link Workspace#gramSquares()}.
     */
    static Tensor run(GramSchedule.Products<Tensor> p, int steps, Workspace ws,
                      java.util.function.BiConsumer<Tensor, Tensor> precondition) {
        Tensor[] extra = ws.gramSquares();
        return GramSchedule.run(p, steps, new GramSchedule.Buffers<>(ws.x, ws.y,
                new Tensor[] {ws.a, extra[0], ws.t, extra[1], ws.b, extra[2]}), precondition);
    }
}
