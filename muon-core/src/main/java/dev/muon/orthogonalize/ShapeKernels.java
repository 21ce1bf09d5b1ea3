package dev.muon.orthogonalize;

/**
 * What {@link NewtonSchulz} keeps per input shape: the {@link Workspace} and the kernels that run over it, each
 * created on first use. The kernels hold the workspace, not the other way round, so that the buffers sit below
 * everything that uses them.
 */
final class ShapeKernels {
    final Workspace ws;
    /** The full products of the libtorch forms (the plain kernel's, and the symmetric and Gram kernels'). */
    final MatrixProducts products;
    private GramIteration gram;
    private SymmetricIteration symmetric;
    private BlasKernels blas;

    ShapeKernels(Workspace ws) {
        this.ws = ws;
        this.products = MatrixProducts.forTensorsLike(ws.x);
    }

    /**
     * The OpenBLAS kernels for this shape, created on first use (CPU, float32 or float64 only); in float32 their
     * products run on muon-core's native kernels where those run ({@link NativeKernels}).
     *
     * @param float64 whether the workspace is float64
     */
    BlasKernels blas(boolean float64) {
        if (blas == null) {
            blas = new BlasKernels(ws, float64, NativeKernels.variant().orElse(null));
        }
        return blas;
    }

    /**
     * The libtorch form of the symmetric kernel for this shape, created on first use; in bfloat16 with the AVX-512
     * native variant, one native pass per step up to {@link NewtonSchulz#BFLOAT16_ONE_PASS_MAX_ROWS} rows.
     */
    SymmetricIteration symmetric() {
        if (symmetric == null) {
            NativeKernels.Variant nativeKernel = GramProduct.nativeVariantFor(ws.x);
            boolean onePass = ws.x.dim() == 2 && SymmetricIteration.onePassServes(nativeKernel, ws.x.size(0),
                    ws.x.size(1));
            symmetric = new SymmetricIteration(ws, nativeKernel, onePass, products);
        }
        return symmetric;
    }

    /** The libtorch form of the Gram kernel for this shape, created on first use. */
    GramIteration gram() {
        if (gram == null) {
            // Row-blocked m x m squares lose to one GEMM on the CPU below CPU_SQUARE_MIN_ROWS (measured there
            // only; other devices keep them everywhere); the native half product wins at every size it serves.
            NativeKernels.Variant nativeKernel = GramProduct.nativeVariantFor(ws.x);
            boolean rowBlocksOnCpu = ws.x.device().is_cpu() && nativeKernel == null;
            int blockedSquaresMinRows = rowBlocksOnCpu ? GramProduct.CPU_SQUARE_MIN_ROWS : 0;
            gram = new GramIteration(ws, blockedSquaresMinRows, nativeKernel, products);
        }
        return gram;
    }
}
