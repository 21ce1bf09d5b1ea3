package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * Gram Newton–Schulz: the same iteration, carried out on {@code m × m} matrices for a wide {@code m × n} input.
 *
 * <p>With {@code X_k = Q_k·X_r} and {@code R_k = X_k X_kᵀ}, a step {@code X_{k+1} = Z_k·X_k} with
 * {@code Z_k = a·I + b·R_k + c·R_k²} becomes {@code Q_{k+1} = Z_k·Q_k} and {@code R_{k+1} = Z_k R_k Z_k =
 * R_k·Z_k²} ({@code Z_k} is a polynomial in {@code R_k}, so they commute). Only the Gram matrices
 * {@code X_r X_rᵀ} and the products {@code Q·X_r} touch the long dimension.
 *
 * <p>Every product of a symmetric matrix with itself ({@code X_r X_rᵀ}, {@code R_k²}, {@code Z_k²}) is formed by
 * {@link GramProduct} at about half the multiply-adds of a GEMM and comes out exactly symmetric; the two
 * products of commuting matrices ({@code R_k·Z_k²}, {@code Z_k·Q_k}) are plain GEMMs. For 5 steps at
 * {@code n = 4m} that is about {@code 22m³} multiply-adds with true half products (OpenBLAS {@code ?syrk},
 * {@link BlasKernels#gram}, which runs instead of this class on the CPU in float32 and float64) against
 * {@code 45m³} for the plain iteration. This class is the libtorch form: bfloat16, and any device.
 *
 * <p>A restart every {@value #RESTART_EVERY} steps ({@code X_r = Q_k·X_r}, then a fresh Gram matrix) bounds the
 * drift between {@code R_k} and the true {@code X_k X_kᵀ} that rounding accumulates, as Dao-AILab's
 * gram-newton-schulz does. We measured where to put it for 5 steps at 512 × 2048 against the float64 iteration,
 * over Gaussian, exponentially decaying, power-law and low-rank-plus-noise spectra: after 3 steps the bfloat16
 * error is at most the plain bfloat16 kernel's (0.04–0.16 against 0.03–0.26) and float32 matches the plain
 * float32 kernel (1.1e-5–2.5e-5); after 2 steps bfloat16 is up to 4x worse on decaying spectra (0.28 against
 * 0.07); with no restart, or with {@code R} recomputed as {@code Q·R_0·Q} instead of from {@code X}, power-law
 * inputs diverge.
 */
final class GramIteration {
    /** Steps between restarts (a restart happens before step k for every k = 3, 6, ... below the step count). */
    static final int RESTART_EVERY = 3;

    private final Tensor x0;
    private final Tensor x1;
    private final Tensor r;
    private final Tensor rNext;
    private final Tensor squared;
    private final Tensor z;
    private final Tensor q;
    private final Tensor qNext;
    private final GramProduct gram;

    GramIteration(Workspace ws) {
        x0 = ws.x;
        x1 = ws.y;
        long m = ws.x.size(0);
        TensorOptions options = GramProduct.optionsOf(ws.x);
        z = ws.t;
        q = ws.b;
        r = ws.a;
        rNext = square(m, options);
        squared = square(m, options);
        qNext = square(m, options);
        gram = new GramProduct(m, options);
    }

    private static Tensor square(long m, TensorOptions options) {
        return NativeLifetime.outliveScope(torch.empty(new long[]{m, m}, options, null));
    }

    /**
     * Runs the iteration on the workspace's {@code x}, which holds the normalised input, and returns the buffer
     * holding the result.
     */
    Tensor iterate(int steps, Scalar[] linear, Scalar[] cubic, Scalar[] quintic) {
        Tensor source = x0;
        Tensor rk = r;
        Tensor rSpare = rNext;
        Tensor zk = z;
        Tensor qk = q;
        Tensor qSpare = qNext;
        gram.into(rk, source);
        boolean qIsIdentity = true;
        for (int k = 0; k < steps; k++) {
            if (k > 0 && k % RESTART_EVERY == 0) {
                // Materialise X_k = Q_k·X_r and start again from its exact Gram matrix.
                Tensor target = source == x0 ? x1 : x0;
                torch.mm_out(target, qk, source);
                source = target;
                gram.into(rk, source);
                qIsIdentity = true;
            }
            gram.into(squared, rk);
            torch.mul_out(zk, squared, quintic[k]);
            zk.add_(rk, cubic[k]);
            zk.diagonal().add_(linear[k]);
            Tensor zCurrent = zk;
            if (qIsIdentity) {
                // Q_{k+1} = Z_k: hand Z's buffer over to Q instead of copying it.
                zk = qk;
                qk = zCurrent;
                qIsIdentity = false;
            } else {
                torch.mm_out(qSpare, zCurrent, qk);
                Tensor t = qk;
                qk = qSpare;
                qSpare = t;
            }
            boolean last = k == steps - 1;
            boolean restartsNext = (k + 1) % RESTART_EVERY == 0;
            if (!last && !restartsNext) {
                gram.into(squared, zCurrent);
                torch.mm_out(rSpare, rk, squared);
                Tensor t = rk;
                rk = rSpare;
                rSpare = t;
            }
        }
        Tensor out = source == x0 ? x1 : x0;
        torch.mm_out(out, qk, source);
        return out;
    }
}
