package dev.muon.orthogonalize;

/**
 * Which kernel {@link NewtonSchulz} uses for its iterations. Every choice computes the same function and passes
 * the same golden and property tests; they differ in speed.
 */
public enum NsAlgorithm {
    /**
     * {@link #SYMMETRIC} where it applies (a single matrix on the CPU, float32 or float64, at least
     * {@value NewtonSchulz#SYMMETRIC_MIN_ROWS} rows after the tall transpose, OpenBLAS loadable), else
     * {@link #GEMM}. The default.
     */
    AUTO,
    /** Three plain libtorch GEMMs per step: any device, any dtype, batches. Forces the fast paths off. */
    GEMM,
    /**
     * Exploits the symmetry of {@code X·Xᵀ} and {@code A·A}: OpenBLAS {@code ?syrk} computes one triangle of each
     * (half the multiply-adds) and {@code ?symm} applies the symmetric polynomial. CPU, float32/float64, single
     * matrices; where it does not apply, {@code GEMM} runs instead.
     */
    SYMMETRIC
}
