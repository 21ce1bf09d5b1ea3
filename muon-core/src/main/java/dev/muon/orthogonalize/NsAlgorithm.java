package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

/**
 * Which kernel {@link NewtonSchulz} uses for its iterations. Every choice computes the same function and passes
 * the same golden and property tests; they differ in speed.
 */
public enum NsAlgorithm {
    /**
     * The default. For a single matrix on the CPU with at least {@value NewtonSchulz#SYMMETRIC_MIN_ROWS} rows
     * after the tall transpose: {@link #GRAM} when the long side is at least
     * {@value NewtonSchulz#GRAM_MIN_ASPECT} times the short one (any dtype), else {@link #SYMMETRIC} in float32
     * and float64 (if OpenBLAS loads) and in bfloat16 from {@value NewtonSchulz#BFLOAT16_NATIVE_SYMMETRIC_MIN_ROWS}
     * rows where muon-core's native half product runs ({@link NativeKernels}), from
     * {@value NewtonSchulz#BFLOAT16_SYMMETRIC_MIN_ROWS} where it does not (where its row-blocked products start
     * to win). Everything else (batches, GPUs, small matrices, bfloat16 squares below that size): {@link #GEMM}.
     */
    AUTO,
    /** Three plain libtorch GEMMs per step: any device, any dtype, batches. Forces the fast paths off. */
    GEMM,
    /**
     * Exploits the symmetry of {@code X·Xᵀ} and {@code A·A}: in float32/float64 OpenBLAS {@code ?syrk} computes
     * one triangle of each (half the multiply-adds) and {@code ?symm} applies the symmetric polynomial; in
     * bfloat16 where muon-core's native half product runs (AVX512_BF16, or AVX2 with FMA) it does the same, the
     * polynomial fused into {@code A·A}, and with the AVX-512 variant up to
     * {@value NewtonSchulz#BFLOAT16_ONE_PASS_MAX_ROWS} rows each whole step is one native pass ({@code B·X} on the
     * same tiles, no mirror); otherwise (bfloat16 without it, or no OpenBLAS) each is formed from row
     * blocks of GEMMs above the diagonal, which saves less and loses to the plain kernel below about 1536 rows.
     * CPU, single matrices; on other devices and for batches, {@code GEMM} runs instead.
     */
    SYMMETRIC,
    /**
     * Gram Newton–Schulz: iterates on the {@code m × m} Gram matrix and touches the long side only at the start,
     * at one restart and at the end; fewer multiply-adds the more rectangular the input. Products of a symmetric
     * matrix with itself are formed as one triangle (OpenBLAS {@code ?syrk} in float32/float64 on the CPU, row
     * blocks of GEMMs otherwise). Any device and dtype, single matrices; batches run {@code GEMM}. In bfloat16
     * the restart every 3 steps keeps its error at or below the plain kernel's (see {@code GramIteration}).
     */
    GRAM;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
