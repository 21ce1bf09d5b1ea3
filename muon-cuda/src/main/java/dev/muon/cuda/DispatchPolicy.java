package dev.muon.cuda;

import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Which Newton–Schulz stages run on the custom kernels and which on libtorch, by shape, from thresholds
 * measured on a GPU (the table and the command are in {@code docs/cuda.md}).
 *
 * <p>Rule: a kernel is used only where it measured at least as fast as the libtorch ops it replaces, so that
 * the custom path is never slower than 0.98× the libtorch path. An architecture without measurements gets
 * {@link #libtorchOnly(String)}; {@code -Ddev.muon.cuda.forceKernels=true} gives {@link #forced(boolean)}.
 *
 * <table>
 *   <caption>Measured on an NVIDIA H100 80GB HBM3 (compute capability 9.0), bf16, medians of CUDA-event timings</caption>
 *   <tr><th>stage</th><th>kernel</th><th>used when</th><th>measured against libtorch</th></tr>
 *   <tr><td>{@code A = X Xᵀ}</td><td>sm_90a wgmma</td><td>{@code m >= 4096}</td>
 *       <td>1.29–1.47× at m = 4096, 8192; 0.41–0.96× at m ≤ 3072 (one outlier, 1536 × 6144: 1.05×)</td></tr>
 *   <tr><td>{@code B = c A² + b A + a I}</td><td>sm_90a wgmma</td><td>{@code m >= 256}</td>
 *       <td>1.05–1.51× at m = 256 … 8192 (weakest at 2048); batched 1.30–1.60×</td></tr>
 *   <tr><td>normalise + transpose + cast</td><td>two passes</td><td>{@code rows · cols >= 2^18}</td>
 *       <td>1.15–2.24× from 256 × 1024 up</td></tr>
 *   <tr><td>whole step, this policy</td><td></td><td></td>
 *       <td>1.01–1.25× (CUDA graphs), 16 shapes from 256 × 1024 to 8192², batches included</td></tr>
 * </table>
 * The aspect ratio did not move a decision in the measured range ({@code n / m} of 1 and 4, wide and tall),
 * so the thresholds are on {@code m} alone; the portable mma.sync kernel lost to cuBLAS at every measured size
 * on this GPU and is used only when forced or on unmeasured GPUs that are forced.
 *
 * @param basis               where the thresholds come from, for logs
 * @param hopperKernel        whether the symmetric products run on the sm_90a kernel (else the portable one)
 * @param minXxtOrder         smallest {@code m} for which {@code X Xᵀ} runs on the symmetric kernel
 * @param minFusedOrder       smallest {@code m} for which {@code b A + c A²} runs on the symmetric kernel
 * @param minNormalizeElements smallest {@code rows · cols} for which the normalisation kernels run
 */
record DispatchPolicy(String basis, boolean hopperKernel, long minXxtOrder, long minFusedOrder,
                      long minNormalizeElements) {

    /** Means "never": no matrix is this large. */
    static final long NEVER = Long.MAX_VALUE;

    /**
     * Validates the thresholds.
     *
     * @throws IllegalArgumentException if a threshold is below 1
     */
    DispatchPolicy {
        java.util.Objects.requireNonNull(basis, "basis must not be null");
        requirePositive("minXxtOrder", minXxtOrder);
        requirePositive("minFusedOrder", minFusedOrder);
        requirePositive("minNormalizeElements", minNormalizeElements);
    }

    /**
     * The measured thresholds for a compute capability, or {@link #libtorchOnly(String)} where none were taken.
     *
     * @param major compute capability, major
     * @param minor compute capability, minor
     * @return the policy
     */
    static DispatchPolicy measured(int major, int minor) {
        if (major == 9 && minor == 0) {
            // H100 80GB HBM3, muon-cuda/src/test/python/gpu_check.py, medians in docs/cuda.md.
            return new DispatchPolicy("measured on H100 (sm_90)", true, 4096, 256, 1L << 18);
        }
        return libtorchOnly("no thresholds were measured for compute capability " + major + "." + minor);
    }

    /**
     * Every stage on libtorch.
     *
     * @param why the reason, for logs
     * @return the policy
     */
    static DispatchPolicy libtorchOnly(String why) {
        return new DispatchPolicy(why, false, NEVER, NEVER, NEVER);
    }

    /**
     * Every eligible stage on the kernels, whatever the size (for benchmarking unmeasured GPUs).
     *
     * @param hopper whether the sm_90a kernel is loaded
     * @return the policy
     */
    static DispatchPolicy forced(boolean hopper) {
        return new DispatchPolicy("forced by -Ddev.muon.cuda.forceKernels=true", hopper, 1, 1, 1);
    }

    /**
     * Whether any stage can ever run on a kernel.
     *
     * @return false for {@link #libtorchOnly(String)}
     */
    boolean anyKernel() {
        return minXxtOrder != NEVER || minFusedOrder != NEVER || minNormalizeElements != NEVER;
    }

    /**
     * The plan for one call.
     *
     * @param batch           matrices in the call (1 for a plain matrix)
     * @param m               the Gram order, {@code min(rows, cols)}
     * @param n               {@code max(rows, cols)}
     * @param inputDtype      the input's {@link ScalarType#value}
     * @param inputContiguous whether the input is contiguous
     * @return which stages run on kernels
     */
    NsPlan plan(long batch, long m, long n, byte inputDtype, boolean inputContiguous) {
        if (batch > LaunchChecks.MAX_BATCH) {
            return new NsPlan(false, false, false);  // the batch rides in gridDim.z
        }
        // The symmetric kernels move 16-byte row chunks: both dimensions must be whole chunks of 8 bf16.
        boolean aligned = m % 8 == 0 && n % 8 == 0 && m <= TriangleTiles.MAX_M && n <= Integer.MAX_VALUE;
        boolean normalizable = inputContiguous
                && (inputDtype == ScalarType.Float.value || inputDtype == ScalarType.BFloat16.value)
                && n <= Integer.MAX_VALUE && m * n >= minNormalizeElements
                // The transposing kernel's grid.y covers rows / 32 <= 65535.
                && (n + 31) / 32 <= 65_535;
        return new NsPlan(normalizable, aligned && m >= minXxtOrder, aligned && m >= minFusedOrder);
    }

    private static void requirePositive(String field, long value) {
        if (value < 1) {
            throw new IllegalArgumentException(field + " must be >= 1, got " + value);
        }
    }

    /**
     * Which stages of one Newton–Schulz call run on kernels.
     *
     * @param normalize the fused normalisation (norm, scale, cast, tall transpose)
     * @param xxt       {@code A = X Xᵀ}
     * @param fusedB    {@code B = b A + c A² + a I}
     */
    record NsPlan(boolean normalize, boolean xxt, boolean fusedB) {
        /**
         * Whether any stage runs on a kernel.
         *
         * @return true if the call leaves libtorch's path
         */
        boolean anyKernel() {
            return normalize || xxt || fusedB;
        }
    }
}
