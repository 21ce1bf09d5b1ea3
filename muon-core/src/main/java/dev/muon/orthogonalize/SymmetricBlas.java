package dev.muon.orthogonalize;

import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.openblas.global.openblas_nolapack;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import static org.bytedeco.openblas.global.openblas_nolapack.CblasLeft;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasUpper;

/**
 * The symmetric Newton–Schulz iteration on OpenBLAS, over the workspaces' memory. Per step, for {@code X} of
 * shape {@code m × n}:
 * <pre>
 *   A_up = syrk(X)                  upper triangle of X·Xᵀ: m²n multiply-adds instead of 2m²n
 *   T    = A_up + A_upᵀ − diag(A)   the full A (the lower triangle of A's buffer is kept at zero)
 *   B_up = b·A_up + c·syrk(T)       upper triangle of b·A + c·A²: m³ instead of 2m³
 *   B_up += a·I
 *   X'   = symm(B_up)·X             2m²n, reading only the upper triangle of B
 * </pre>
 * for {@code m²(3n + m)} multiply-adds a step against {@code m²(4n + 2m)} for three GEMMs.
 *
 * <p>OpenBLAS is probed once; without it (or with {@code -Ddev.muon.blas.disable=true}) the caller uses GEMMs.
 */
final class SymmetricBlas {
    /** Set to {@code true} to force the GEMM path, e.g. to compare the two. */
    static final String DISABLE_PROPERTY = "dev.muon.blas.disable";

    private static final Throwable UNAVAILABILITY_CAUSE = probe();

    private SymmetricBlas() {
    }

    private static Throwable probe() {
        if (Boolean.getBoolean(DISABLE_PROPERTY)) {
            return new UnsupportedOperationException("disabled by -D" + DISABLE_PROPERTY + "=true");
        }
        try {
            Loader.load(openblas_nolapack.class);
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    static boolean isAvailable() {
        return UNAVAILABILITY_CAUSE == null;
    }

    static Throwable unavailabilityCause() {
        return UNAVAILABILITY_CAUSE;
    }

    /**
     * Runs the iteration on {@code ws.x}, which holds the normalised input, and returns the buffer holding the
     * result. {@code ws.a} must have a zero lower triangle (it is allocated zeroed and only its upper triangle
     * is ever written here).
     */
    static Tensor iterate(Workspace ws, NewtonSchulzConfig config, Scalar[] cubic, Scalar[] linear,
                          boolean float64) {
        int m = (int) ws.x.size(0);
        int n = (int) ws.x.size(1);
        Tensor x = ws.x;
        Tensor next = ws.y;
        Tensor diagonalOfA = ws.a.diagonal();
        Tensor diagonalOfT = ws.t.diagonal();
        Tensor diagonalOfB = ws.b.diagonal();
        Tensor aTransposed = ws.a.t();
        for (int k = 0; k < config.nsSteps(); k++) {
            double c = config.nsCoefficients().at(k).c();
            syrk(float64, m, n, 1.0, x, 0.0, ws.a);
            torch.add_out(ws.t, ws.a, aTransposed);
            diagonalOfT.sub_(diagonalOfA);
            torch.mul_out(ws.b, ws.a, cubic[k]);
            syrk(float64, m, m, c, ws.t, 1.0, ws.b);
            diagonalOfB.add_(linear[k]);
            symm(float64, m, n, ws.b, x, next);
            Tensor done = x;
            x = next;
            next = done;
        }
        return x;
    }

    /** Writes the upper triangle of {@code x·xᵀ} into {@code out} ({@code x} row-major {@code m × n}). */
    static void syrkUpper(boolean float64, Tensor x, Tensor out) {
        syrk(float64, (int) x.size(0), (int) x.size(1), 1.0, x, 0.0, out);
    }

    /** {@code c_up = alpha·a·aᵀ + beta·c_up} for row-major {@code a} of shape {@code rows × inner}. */
    private static void syrk(boolean float64, int rows, int inner, double alpha, Tensor a, double beta, Tensor c) {
        if (float64) {
            openblas_nolapack.cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, rows, inner, alpha,
                    new DoublePointer(a.data_ptr()), inner, beta, new DoublePointer(c.data_ptr()), rows);
        } else {
            openblas_nolapack.cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, rows, inner, (float) alpha,
                    new FloatPointer(a.data_ptr()), inner, (float) beta, new FloatPointer(c.data_ptr()), rows);
        }
    }

    /** {@code out = sym(b_up)·x} for {@code b} of shape {@code m × m} and {@code x} of shape {@code m × n}. */
    private static void symm(boolean float64, int m, int n, Tensor b, Tensor x, Tensor out) {
        if (float64) {
            openblas_nolapack.cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, m, n, 1.0,
                    new DoublePointer(b.data_ptr()), m, new DoublePointer(x.data_ptr()), n, 0.0,
                    new DoublePointer(out.data_ptr()), n);
        } else {
            openblas_nolapack.cblas_ssymm(CblasRowMajor, CblasLeft, CblasUpper, m, n, 1f,
                    new FloatPointer(b.data_ptr()), m, new FloatPointer(x.data_ptr()), n, 0f,
                    new FloatPointer(out.data_ptr()), n);
        }
    }
}
