package dev.muon.cuda;

import dev.muon.internal.NativeLifetime;
import dev.muon.internal.NewtonSchulzAccess;
import dev.muon.internal.NewtonSchulzKernels;
import dev.muon.internal.SystemSwitch;
import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.cuda.CUDAGuard;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Newton–Schulz orthogonalization for CUDA tensors in bfloat16, with the symmetric products on muon-cuda's
 * kernels: the same iteration as {@link NewtonSchulz}, so results agree to bf16 rounding.
 *
 * <p>Algorithm ({@code G} of shape {@code rows × cols}, or a batch of them; {@code m = min}, {@code n = max}):
 * <ol>
 *   <li>{@code X = G / max(s·‖G‖_F, eps)} in bfloat16, transposed when {@code rows > cols}: two passes over
 *       {@code G} (a norm, then scale + cast + transpose), the norm in float32.</li>
 *   <li>Per step with {@code (a, b, c)}: {@code A = X Xᵀ} computing only the tiles on and above the diagonal;
 *       {@code B = c·A·A + b·A + a·I} in one symmetric kernel (A is symmetric, so {@code A·A = A·Aᵀ});
 *       {@code X = B·X} on libtorch's cuBLAS ({@code mm_out}). Folding {@code a·I} into {@code B} is the same
 *       rewrite {@link NewtonSchulz} uses: {@code a·X + (b·A + c·A²)·X = (a·I + b·A + c·A²)·X}.</li>
 * </ol>
 * Each stage runs on a kernel only where {@link DispatchPolicy} says it measured faster than libtorch; the
 * others, and every input the kernels do not take (float16 or float64 input, a strided view, dimensions that
 * are not multiples of 8, precisions other than bfloat16, tensors on another device), run on libtorch. The loop
 * and its workspace are {@link NewtonSchulz}'s: this class hands it the stages its kernels take over
 * ({@link NewtonSchulzAccess#orthogonalizeWith}). A call that no kernel would speed up is handed to
 * {@link NewtonSchulz} whole.
 *
 * <table>
 *   <caption>Settings it honours ({@link NewtonSchulzConfig})</caption>
 *   <tr><td>nsCoefficients, nsSteps, eps</td><td>all schedules, including per-step ones and Polar Express's
 *       normalisation safety</td></tr>
 *   <tr><td>nsPrecision</td><td>BFLOAT16 on the kernels; FLOAT32 and FLOAT64 go to libtorch whole</td></tr>
 *   <tr><td>nsAlgorithm</td><td>AUTO and SYMMETRIC (the symmetric kernels); GEMM and GRAM are refused at
 *       construction: they ask for plain products and for another iteration, which {@link NewtonSchulz} runs</td></tr>
 *   <tr><td>nsPreconditioning</td><td>FROBENIUS (the normalization kernel) and AOL (no normalization; the kernels
 *       form every Gram matrix and polynomial, and {@link NewtonSchulz}'s AOL rescaling of the first Gram matrix and
 *       the input runs between them on libtorch's ops)</td></tr>
 * </table>
 *
 * <pre>{@code
 * Orthogonalizer ns = new CudaNewtonSchulz(NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16),
 *         new Device("cuda:0"));
 * Tensor o = ns.orthogonalize(momentum);   // a view of a workspace, valid until the next call
 * }</pre>
 *
 * <p>Muon picks it up by itself for CUDA parameters ({@link CudaOrthogonalizerProvider}). Not thread-safe.
 */
// PointerScope and CUDAGuard work by existing: their try blocks never name them.
@SuppressWarnings("try")
public final class CudaNewtonSchulz implements Orthogonalizer {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private final NewtonSchulzConfig config;
    private final int deviceIndex;
    private final NewtonSchulz libtorch;
    private final CudaKernels kernels;
    private final DispatchPolicy policy;
    private final Map<Long, Tensor> normPartials = new HashMap<>();

    /**
     * Creates the orthogonalizer and loads the kernels on {@code device}.
     *
     * @param config the Newton–Schulz settings
     * @param device a CUDA device
     * @throws IllegalArgumentException      if {@code nsAlgorithm} is GEMM or GRAM, or {@code device} is not a CUDA
     *                                       device
     * @throws UnsupportedOperationException if {@link CudaSupport#isAvailable()} is false
     */
    public CudaNewtonSchulz(NewtonSchulzConfig config, Device device) {
        this.config = Objects.requireNonNull(config, "config must not be null");
        if (config.nsAlgorithm() == NsAlgorithm.GEMM || config.nsAlgorithm() == NsAlgorithm.GRAM) {
            throw new IllegalArgumentException("nsAlgorithm must be AUTO or SYMMETRIC for CudaNewtonSchulz, whose "
                    + "kernels run the symmetric products (GEMM asks for plain products and GRAM for another "
                    + "iteration: NewtonSchulz runs both), got " + config.nsAlgorithm());
        }
        this.deviceIndex = CudaSupport.kernelDeviceIndex(device);
        this.libtorch = new NewtonSchulz(config);
        this.kernels = new CudaKernels(deviceIndex);
        this.policy = SystemSwitch.isOn(CudaSupport.FORCE_PROPERTY)
                ? DispatchPolicy.forced(kernels.hasHopperKernel())
                : DispatchPolicy.measured(kernels.computeCapability() / 10, kernels.computeCapability() % 10);
        if (!policy.anyKernel()) {
            CudaSupport.logFallbackOnce(policy.basis() + "; set -D" + CudaSupport.FORCE_PROPERTY
                    + "=true to use the kernels anyway");
        }
    }

    /**
     * The settings this orthogonalizer runs with.
     *
     * @return the configuration
     */
    public NewtonSchulzConfig config() {
        return config;
    }

    @Override
    public Tensor orthogonalize(Tensor update) {
        if (!servable(update)) {
            // libtorch's path also owns the input contract: it throws the documented exceptions.
            return libtorch.orthogonalize(update);
        }
        boolean batched = update.dim() == 3;
        long rows = update.size(-2);
        long cols = update.size(-1);
        long m = Math.min(rows, cols);
        long n = Math.max(rows, cols);
        DispatchPolicy.NsPlan plan = policy.plan(batched ? update.size(0) : 1, m, n, update.scalar_type().value,
                update.is_contiguous());
        if (!plan.anyKernel()) {
            return libtorch.orthogonalize(update);
        }
        boolean tall = rows > cols;
        try (PointerScope scope = new PointerScope(); CUDAGuard guard = new CUDAGuard((byte) deviceIndex)) {
            Tensor o = NewtonSchulzAccess.orthogonalizeWith(libtorch, update,
                    new KernelStages(plan, batched ? update.size(0) : 0));
            // Workspace tensors outlive this scope already; only the transposed view is new here.
            return tall ? NativeLifetime.outliveScope(o) : o;
        }
    }

    /** Whether this call can leave libtorch's path at all: right device, dtype family, rank and precision. */
    private boolean servable(Tensor update) {
        return config.nsPrecision() == NsPrecision.BFLOAT16
                && update != null && update.defined() && !update.is_sparse() && update.is_floating_point()
                && (update.dim() == 2 || update.dim() == 3)
                && update.is_cuda() && update.device().index() == deviceIndex
                && update.numel() > 0;
    }

    /**
     * The normalisation kernel's float32 scratch for a batch size (0 for a plain matrix), made at its first use
     * and reused; the iteration's own buffers are {@link NewtonSchulz}'s workspace.
     */
    private Tensor normPartials(long batch) {
        return normPartials.computeIfAbsent(batch, b -> {
            try (PointerScope scope = new PointerScope()) {
                Device dev = new Device(torch.DeviceType.CUDA, (byte) deviceIndex);
                TensorOptions f32 = new TensorOptions(ScalarType.Float).device(new DeviceOptional(dev));
                return NativeLifetime.outliveScope(
                        torch.empty(new long[]{Math.max(1, b) * CudaKernels.MAX_NORM_PARTS}, f32, null));
            }
        });
    }

    /** The stages that one call's plan puts on the kernels; {@link NewtonSchulz} runs the declined ones. */
    private final class KernelStages implements NewtonSchulzKernels {
        private final DispatchPolicy.NsPlan plan;
        private final long batch;

        KernelStages(DispatchPolicy.NsPlan plan, long batch) {
            this.plan = plan;
            this.batch = batch;
        }

        @Override
        public boolean normalizeInto(Tensor out, Tensor update) {
            if (!plan.normalize()) {
                return false;
            }
            kernels.normalize(update, out, normPartials(batch), config.nsCoefficients().normalizationSafety(),
                    config.eps());
            return true;
        }

        @Override
        public boolean gramInto(Tensor out, Tensor x) {
            if (!plan.xxt()) {
                return false;
            }
            kernels.symmetric(x, null, out, 1.0, 0.0, 0.0, policy.hopperKernel());
            return true;
        }

        @Override
        public boolean polynomialInto(Tensor out, Tensor gram, int step) {
            if (!plan.fusedB()) {
                return false;
            }
            Coefficients c = config.nsCoefficients().at(step);
            // The kernel forms A·Aᵀ from rows of A. An A from cuBLAS can differ from its transpose by bf16
            // rounding, so this is A·A to that rounding (checked on the GPU: docs/cuda.md).
            kernels.symmetric(gram, gram, out, c.c(), c.b(), c.a(), policy.hopperKernel());
            return true;
        }
    }
}
