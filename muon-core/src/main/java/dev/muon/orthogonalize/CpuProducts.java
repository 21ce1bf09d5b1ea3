package dev.muon.orthogonalize;

import org.bytedeco.pytorch.Tensor;

/**
 * The products of the symmetric and Gram Newton–Schulz iterations on one CPU workspace, and the normalisation before
 * them: on OpenBLAS ({@link OpenBlasProducts}, float32 and float64) or on muon-core's native float32 kernels
 * ({@link NativeFloat32Products}). {@link BlasKernels} chooses one when it is made and runs the iterations' algebra
 * over it.
 *
 * <p>A symmetric result may be written in its upper triangle only (OpenBLAS's {@code ?syrk} writes no more), and
 * the same products then read no more of it as a symmetric operand ({@link #symmetricTimes},
 * {@link #commutingTimes}); {@link #completeLower} makes such a result whole where a caller needs both triangles.
 * So one iteration runs on one implementation throughout. Every operand is a contiguous row-major tensor of the
 * products' dtype, and no result overlaps an operand.
 */
interface CpuProducts {

    /**
     * {@code out = g / max(safety·‖g‖_F, eps)} for the wide {@code out}; {@code g} is of its shape or, with
     * {@code transposed}, of the transposed one (a tall input, read transposed).
     */
    void normalize(Tensor out, Tensor g, boolean transposed, double safety, double eps);

    /** {@code out = x·xᵀ}, both triangles. */
    void gram(Tensor out, Tensor x);

    /** {@code out = a·I + b·s + c·s·s} for the symmetric {@code s}; the upper triangle at least. */
    void polynomial(Tensor out, Tensor s, Coefficients c);

    /** {@code out = s·s} for the exactly symmetric {@code s}; the upper triangle at least. */
    void square(Tensor out, Tensor s);

    /** Copies the upper triangle of the square {@code s} over its lower one, where these products leave it out. */
    void completeLower(Tensor s);

    /** {@code out = s·b} for the symmetric {@code s}, as these products wrote it. */
    void symmetricTimes(Tensor out, Tensor s, Tensor b);

    /**
     * {@code out = s·t} for the symmetric {@code s}, as these products wrote it, and a square {@code t} that
     * commutes with it: in the Gram iteration both are polynomials in one Gram matrix.
     */
    void commutingTimes(Tensor out, Tensor s, Tensor t);

    /** {@code out = l·r} for the square {@code l}. */
    void times(Tensor out, Tensor l, Tensor r);
}
