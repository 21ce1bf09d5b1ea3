package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The products of the symmetric and Gram iterations on OpenBLAS ({@link OpenBlas}), in float32 or float64, for one
 * CPU workspace: the symmetric results in their upper triangle ({@code ?syrk}), read as such by {@code ?symm}, and
 * every elementwise pass an OpenBLAS call too (see {@link OpenBlas} for why).
 */
final class OpenBlasProducts implements CpuProducts {
    private final OpenBlas blas;
    /** {@code m} ones, the vector {@code ?axpy} adds to the diagonal. */
    private final Tensor ones;

    /**
     * @param float64 the dtype: float64, or float32
     * @param like    a tensor of the workspace's dtype and device, whose first dimension is {@code m}
     */
    OpenBlasProducts(boolean float64, Tensor like) {
        this.blas = new OpenBlas(float64);
        this.ones = NativeLifetime.outliveScope(torch.ones(new long[]{like.size(0)}, like.options()));
    }

    @Override
    public void normalize(Tensor out, Tensor g, boolean transposed, double safety, double eps) {
        blas.normalizeInto(out, g, transposed, safety, eps);
    }

    @Override
    public void gram(Tensor out, Tensor x) {
        blas.syrkUpper(1.0, x, 0.0, out);
        blas.mirrorUpper(out);
    }

    /** One {@code ?syrk} onto a copy of {@code s}, then {@code a} added to the diagonal: the upper triangle. */
    @Override
    public void polynomial(Tensor out, Tensor s, Coefficients c) {
        blas.copy(s, out);
        blas.syrkUpper(c.c(), s, c.b(), out);
        blas.addToDiagonal(out, c.a(), ones);
    }

    @Override
    public void square(Tensor out, Tensor s) {
        blas.syrkUpper(1.0, s, 0.0, out);
    }

    @Override
    public void completeLower(Tensor s) {
        blas.mirrorUpper(s);
    }

    @Override
    public void symmetricTimes(Tensor out, Tensor s, Tensor b) {
        blas.symmUpperTimes(s, b, out);
    }

    /** {@code ?symm}, as {@link #symmetricTimes}: OpenBLAS has no product that exploits commuting. */
    @Override
    public void commutingTimes(Tensor out, Tensor s, Tensor t) {
        blas.symmUpperTimes(s, t, out);
    }

    @Override
    public void times(Tensor out, Tensor l, Tensor r) {
        blas.gemm(l, r, out);
    }
}
