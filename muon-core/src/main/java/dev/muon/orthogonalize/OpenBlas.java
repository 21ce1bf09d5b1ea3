package dev.muon.orthogonalize;

import dev.muon.internal.SystemSwitch;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.openblas.global.openblas_nolapack;
import org.bytedeco.pytorch.Tensor;

import static org.bytedeco.openblas.global.openblas_nolapack.CblasLeft;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasUpper;

/**
 * The OpenBLAS calls of the CPU kernels, on the memory of contiguous row-major float32 or float64 tensors, for one
 * dtype fixed at construction.
 *
 * <p>Why the CPU kernels call OpenBLAS for everything, elementwise passes included: libtorch runs its products on
 * OpenBLAS's thread pool and its elementwise ops on an OpenMP pool. Each pool's threads spin for a while after
 * their work, so alternating the two on a machine with as many threads as cores makes each wait for the other
 * (measured: a {@code ?syrk} plus a libtorch mirror of its result took 40 ms where the syrk alone took 25). With
 * every pass of an iteration on OpenBLAS, only the normalisation before it uses OpenMP.
 *
 * <p>OpenBLAS is probed once; without it (or with {@code -Ddev.muon.blas.disable=true}) callers use libtorch.
 */
final class OpenBlas {
    /** Set to {@code true} to force the libtorch kernels, e.g. to compare the two. */
    static final String DISABLE_PROPERTY = "dev.muon.blas.disable";

    private static final Throwable UNAVAILABILITY_CAUSE = probe();

    private final boolean float64;

    OpenBlas(boolean float64) {
        this.float64 = float64;
    }

    private static Throwable probe() {
        try {
            if (SystemSwitch.isOn(DISABLE_PROPERTY)) {
                return new UnsupportedOperationException("disabled by -D" + DISABLE_PROPERTY + "=true");
            }
            Loader.load(openblas_nolapack.class);
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    static boolean isAvailable() {
        return UNAVAILABILITY_CAUSE == null;
    }

    /** The OpenBLAS thread count last set here; 0 before the first call. */
    private static int threads;

    /**
     * Keeps OpenBLAS's pool at libtorch's intra-op thread count ({@code torch.get_num_threads()}), so that
     * {@code torch.set_num_threads(n)} from Java bounds both pools: left alone, OpenBLAS starts as many threads as
     * cores whatever libtorch was told, and a step alternating between the two pools runs twice the threads the
     * user asked for. With adaptive threads on, fewer when other processes keep cores busy ({@link CpuContention}).
     * Two native calls when nothing changed; called at the start of each kernel.
     */
    static void followTorchThreads() {
        int wanted = CpuContention.threadsFor(org.bytedeco.pytorch.global.torch.get_num_threads());
        if (wanted != threads) {
            openblas_nolapack.blas_set_num_threads(wanted);
            threads = wanted;
        }
    }

    /** OpenBLAS's current thread count; for tests. */
    static int threads() {
        return openblas_nolapack.blas_get_num_threads();
    }

    static Throwable unavailabilityCause() {
        return UNAVAILABILITY_CAUSE;
    }

    private static int rows(Tensor t) {
        return Math.toIntExact(t.size(0));
    }

    private static int cols(Tensor t) {
        return Math.toIntExact(t.size(1));
    }

    private Pointer at(Tensor t) {
        return float64 ? new DoublePointer(t.data_ptr()) : new FloatPointer(t.data_ptr());
    }

    /** {@code c = a·b}. */
    void gemm(Tensor a, Tensor b, Tensor c) {
        int m = rows(a);
        int k = cols(a);
        int n = cols(b);
        if (float64) {
            openblas_nolapack.cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0,
                    (DoublePointer) at(a), k, (DoublePointer) at(b), n, 0.0, (DoublePointer) at(c), n);
        } else {
            openblas_nolapack.cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1f,
                    (FloatPointer) at(a), k, (FloatPointer) at(b), n, 0f, (FloatPointer) at(c), n);
        }
    }

    /**
     * The upper triangle of {@code c = alpha·a·aᵀ + beta·c} ({@code a} of shape {@code m × k}, {@code c} of
     * {@code m × m}); the strict lower triangle of {@code c} is left as it was.
     */
    void syrkUpper(double alpha, Tensor a, double beta, Tensor c) {
        int m = rows(a);
        int k = cols(a);
        if (float64) {
            openblas_nolapack.cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, m, k, alpha,
                    (DoublePointer) at(a), k, beta, (DoublePointer) at(c), m);
        } else {
            openblas_nolapack.cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, m, k, (float) alpha,
                    (FloatPointer) at(a), k, (float) beta, (FloatPointer) at(c), m);
        }
    }

    /** {@code c = s·b} for a symmetric {@code s} of which only the upper triangle is read. */
    void symmUpperTimes(Tensor s, Tensor b, Tensor c) {
        int m = rows(b);
        int n = cols(b);
        if (float64) {
            openblas_nolapack.cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, m, n, 1.0, (DoublePointer) at(s), m,
                    (DoublePointer) at(b), n, 0.0, (DoublePointer) at(c), n);
        } else {
            openblas_nolapack.cblas_ssymm(CblasRowMajor, CblasLeft, CblasUpper, m, n, 1f, (FloatPointer) at(s), m,
                    (FloatPointer) at(b), n, 0f, (FloatPointer) at(c), n);
        }
    }

    /**
     * {@code out = g / max(safety·‖g‖_F, eps)} for a wide {@code out} of shape {@code m × n}, where {@code g} is
     * either contiguous of the same shape or, with {@code transposed}, the transpose of a contiguous
     * {@code n × m} tensor (read one column at a time). The norm is OpenBLAS's {@code ?nrm2} in the iteration's
     * dtype; the quotient is a multiplication by the reciprocal, within an ulp of the division.
     */
    void normalizeInto(Tensor out, Tensor g, boolean transposed, double safety, double eps) {
        int m = rows(out);
        int n = cols(out);
        int count = m * n;
        Pointer from = at(g);
        Pointer to = at(out);
        double norm = float64 ? openblas_nolapack.cblas_dnrm2(count, (DoublePointer) from, 1)
                : openblas_nolapack.cblas_snrm2(count, (FloatPointer) from, 1);
        double scale = 1.0 / Math.max(safety * norm, eps);
        if (transposed) {
            for (int i = 0; i < m; i++) {
                copy(n, from, i, m, to, (long) i * n);
            }
        } else {
            copy(count, from, 0, 1, to, 0);
        }
        if (float64) {
            openblas_nolapack.cblas_dscal(count, scale, (DoublePointer) to, 1);
        } else {
            openblas_nolapack.cblas_sscal(count, (float) scale, (FloatPointer) to, 1);
        }
    }

    /** Copies {@code count} elements, {@code stride} apart from {@code from + offset}, to {@code to + toOffset}. */
    private void copy(int count, Pointer from, long offset, int stride, Pointer to, long toOffset) {
        if (float64) {
            openblas_nolapack.cblas_dcopy(count, new DoublePointer(from).position(offset), stride,
                    new DoublePointer(to).position(toOffset), 1);
        } else {
            openblas_nolapack.cblas_scopy(count, new FloatPointer(from).position(offset), stride,
                    new FloatPointer(to).position(toOffset), 1);
        }
    }

    /** {@code to = from}, elementwise, for tensors of equal size. */
    void copy(Tensor from, Tensor to) {
        copy(Math.toIntExact(from.numel()), at(from), 0, 1, at(to), 0);
    }

    /** Adds {@code value} to the diagonal of the square {@code c}; {@code ones} holds {@code m} ones. */
    void addToDiagonal(Tensor c, double value, Tensor ones) {
        int m = rows(c);
        if (float64) {
            openblas_nolapack.cblas_daxpy(m, value, (DoublePointer) at(ones), 1, (DoublePointer) at(c), m + 1);
        } else {
            openblas_nolapack.cblas_saxpy(m, (float) value, (FloatPointer) at(ones), 1, (FloatPointer) at(c), m + 1);
        }
    }

    /**
     * Copies the strict upper triangle of the square {@code c} over its strict lower one, one row at a time
     * (row {@code i}'s left part is column {@code i}'s upper part), on the calling thread.
     */
    void mirrorUpper(Tensor c) {
        int m = rows(c);
        Pointer base = at(c);
        for (int i = 1; i < m; i++) {
            copy(i, base, i, m, base, (long) i * m);
        }
    }
}
