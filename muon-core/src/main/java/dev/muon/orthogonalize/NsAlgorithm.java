package dev.muon.orthogonalize;

/**
 * Which kernel {@link NewtonSchulz} uses for its iterations. Every choice computes the same function and passes
 * the same golden and property tests; they differ in speed.
 */
public enum NsAlgorithm {
    /**
     * The default. For a single matrix on the CPU in float32 or float64 with at least
     * {@value NewtonSchulz#SYMMETRIC_MIN_ROWS} rows after the tall transpose: {@link #GRAM} when the long side is
     * at least {@value NewtonSchulz#GRAM_MIN_ASPECT} times the short one, else {@link #SYMMETRIC} (if OpenBLAS
     * loads). Everything else (bfloat16, batches, GPUs, small matrices): {@link #GEMM}.
     */
    AUTO,
    /** Three plain libtorch GEMMs per step: any device, any dtype, batches. Forces the fast paths off. */
    GEMM,
    /**
     * Exploits the symmetry of {@code X·Xᵀ} and {@code A·A}: OpenBLAS {@code ?syrk} computes one triangle of each
     * (half the multiply-adds) and {@code ?symm} applies the symmetric polynomial. CPU, float32/float64, single
     * matrices; where it does not apply, {@code GEMM} runs instead.
     */
    SYMMETRIC,
    /**
     * Gram Newton–Schulz: iterates on the {@code m × m} Gram matrix and touches the long side only at the start,
     * at one restart and at the end; fewer multiply-adds the more rectangular the input. CPU or any device,
     * float32/float64, single matrices; bfloat16 would square the condition number in 8-bit mantissas, so it
     * runs {@code GEMM} there.
     */
    GRAM
}
