package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import dev.muon.internal.NewtonSchulzAccess;
import dev.muon.internal.NewtonSchulzKernels;
import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiConsumer;

/**
 * Newton–Schulz orthogonalization on libtorch ops, for CPU tensors and as the portable fallback on any device.
 *
 * <p>Algorithm ({@code G} of shape {@code rows × cols}, or a batch of them):
 * <ol>
 *   <li>If {@code rows > cols}, work on {@code X = Gᵀ} so that the Gram matrix is {@code min(rows, cols)} square;
 *       the result is transposed back.</li>
 *   <li>{@code X = X / max(s·‖X‖_F, eps)}, the norm accumulated in float32 (float64 for float64 work), and
 *       {@code s} the schedule's normalisation safety (1 except for Polar Express). A zero input gives zeros.</li>
 *   <li>For each step {@code k} with coefficients {@code (a, b, c)}: {@code A = X Xᵀ; B = b·A + c·A·A;
 *       X = a·X + B·X}.</li>
 * </ol>
 * The plain step is three GEMMs and one pass over the small Gram matrix, {@code B = a·I + A·(c·A + b·I)}, then
 * {@code X' = B·X}, so that no beta-scaled GEMM or elementwise pass touches the large {@code m × n} iterate; it
 * runs on libtorch ops, on any device, for single matrices and batches alike (a matrix gives the same bits alone
 * and in a batch, which keeps same-shape batching and sharded training bit-identical to a plain run). The
 * symmetric and Gram kernels run on OpenBLAS on the CPU in float32 and float64 ({@code BlasKernels}), every pass
 * of them included; elsewhere they run on libtorch ops, with their symmetric products as row blocks of GEMMs
 * (the symmetric kernel on the CPU only, {@code SymmetricIteration}; the Gram kernel on any device,
 * {@code GramIteration}). Which kernel runs is {@link NsAlgorithm}'s documented rule. Everything is written into workspaces created once per shape and reused for every later call
 * (and every parameter of that shape), so a steady-state call allocates no large tensors.
 *
 * <table>
 *   <caption>Defaults ({@link NewtonSchulzConfig#defaults()})</caption>
 *   <tr><td>coefficients</td><td>3.4445, −4.7750, 2.0315 at every step</td></tr>
 *   <tr><td>steps</td><td>5</td></tr>
 *   <tr><td>eps</td><td>1e-7</td></tr>
 *   <tr><td>precision</td><td>float32</td></tr>
 * </table>
 *
 * <pre>{@code
 * NewtonSchulz ns = new NewtonSchulz(NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16));
 * Tensor o = ns.orthogonalize(momentum);   // valid until the next call on ns
 * }</pre>
 *
 * <p>Not thread-safe: the workspaces are shared between calls.
 */
public final class NewtonSchulz implements Orthogonalizer {
    static {
        // Before anything here loads libtorch: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
        // muon-cuda runs the plain loop with its kernel stages through the internal package, so that this class's
        // public API names no internal type.
        NewtonSchulzAccess.register(NewtonSchulz.class, NewtonSchulz::orthogonalizeWith);
    }

    /**
     * The smallest {@code min(rows, cols)} for which {@link NsAlgorithm#AUTO} picks the symmetric kernel; below
     * it, the fixed cost of the extra passes over the small Gram matrix is not repaid.
     */
    public static final int SYMMETRIC_MIN_ROWS = 256;

    /**
     * The smallest long-side / short-side ratio for which {@link NsAlgorithm#AUTO} picks the Gram kernel. Counting
     * multiply-adds for 5 steps with the restart, at {@code n = a·m} the Gram kernel needs about
     * {@code (3a + 10)·m³} in float32 with OpenBLAS, against {@code (7.5a + 2.5)·m³} for the symmetric kernel and
     * {@code (10a + 5)·m³} for plain GEMMs: 16 against 17.5 at {@code a = 2}, 22 against 32.5 and 45 at
     * {@code a = 4}.
     */
    public static final int GRAM_MIN_ASPECT = 2;

    /**
     * The smallest {@code min(rows, cols)} for which {@link NsAlgorithm#AUTO} picks the symmetric kernel in
     * bfloat16 (below {@value #GRAM_MIN_ASPECT}'s aspect ratio) where muon-core's native half product does not run
     * ({@link #BFLOAT16_NATIVE_SYMMETRIC_MIN_ROWS} where it does). libtorch has no bfloat16 half product, so the
     * symmetric products are row blocks of GEMMs ({@code SymmetricIteration}); measured on our 2-core CPU they
     * lose to the plain kernel at 1024² (95 against 84 ms), tie at 1280² (three interleaved runs: 162, 159 and
     * 168 against 164, 161 and 168 ms) and win from 1536² (242–249 against 266–273 ms) up.
     */
    public static final int BFLOAT16_SYMMETRIC_MIN_ROWS = GramProduct.CPU_SQUARE_MIN_ROWS;

    /**
     * The smallest {@code min(rows, cols)} for which {@link NsAlgorithm#AUTO} picks the symmetric kernel in
     * bfloat16 where muon-core's native half product runs (a CPU with AVX512_BF16, or with AVX2 and FMA; see
     * {@code docs/api.md}); it replaces {@value #BFLOAT16_SYMMETRIC_MIN_ROWS} there. Measured with the kernel's
     * AVX-512 variant (the AVX2 one is not measured yet) on our 2-core CPU as {@code Muon} steps of 12
     * same-shape matrices, one by one on this kernel against one batch on the plain kernel (the alternative a
     * same-shape group has, {@code Muon.BATCH_MAX_SIDE}): 1.03× the batch's time at 384², 0.86× at 512²,
     * 0.78× at 640² to 1024²; alone against the plain kernel, 0.87× at 512² and 1.0× at 256².
     */
    public static final int BFLOAT16_NATIVE_SYMMETRIC_MIN_ROWS = 512;

    /**
     * The largest {@code min(rows, cols)} for which the symmetric kernel in bfloat16 runs each step as one native
     * pass ({@code NativeKernels.bfloat16SymmetricStep}: {@code X·Xᵀ}, the polynomial and {@code B·X} on the same
     * register tiles, on one thread pool) where muon-core's AVX-512 native variant runs; above it, and with the
     * AVX2 variant, the half products with {@code B·X} on libtorch's GEMM. Set by interleaved A/B runs of the two
     * on our 2-core Zen 4, under load (docs/benchmarks.md, "the one-pass bfloat16 step"), the median of the
     * per-call ratios one pass / before in each run: 0.86–0.94 at 512², 0.85–0.97 at 768² (one run of nine: 1.11;
     * 24.1 against 27.0 ms in the quietest run), 0.88–0.94 at 1024², 0.91–0.98 at 1280², 0.81–0.96 at 1408²; at
     * 1536² 0.95 and 0.96 in two runs, 1.08 and 1.14 in two others, so not shown faster there.
     */
    public static final int BFLOAT16_ONE_PASS_MAX_ROWS = SymmetricIteration.ONE_PASS_MAX_ROWS;

    private static final long[] LAST_TWO_DIMS = {-2, -1};
    private static final long[] LAST_DIM_ARRAY = {-1};

    /** The stages of a call of {@link #orthogonalize(Tensor)}: all of them on libtorch ops. */
    private static final NewtonSchulzKernels LIBTORCH_ONLY = new NewtonSchulzKernels() {
        @Override
        public boolean normalizeInto(Tensor out, Tensor update) {
            return false;
        }

        @Override
        public boolean gramInto(Tensor out, Tensor x) {
            return false;
        }

        @Override
        public boolean polynomialInto(Tensor out, Tensor gram, int step) {
            return false;
        }
    };

    private final NewtonSchulzConfig config;
    private final Scalar[] linear;
    private final Scalar[] cubic;
    private final Scalar[] quintic;
    private final Scalar two;
    private final Scalar eps;
    private final Scalar normSafety;
    private final Map<Workspace.Key, ShapeKernels> byShape = new HashMap<>();

    /**
     * Creates an orthogonalizer; workspaces are allocated lazily, at the first call for each shape.
     *
     * @param config the validated settings
     */
    public NewtonSchulz(NewtonSchulzConfig config) {
        this.config = Objects.requireNonNull(config, "config must not be null");
        CpuContention.checkSetting();
        int steps = config.nsSteps();
        linear = new Scalar[steps];
        cubic = new Scalar[steps];
        quintic = new Scalar[steps];
        for (int k = 0; k < steps; k++) {
            Coefficients c = config.nsCoefficients().at(k);
            linear[k] = scalar(c.a());
            cubic[k] = scalar(c.b());
            quintic[k] = scalar(c.c());
        }
        two = scalar(2.0);
        eps = scalar(config.eps());
        normSafety = scalar(config.nsCoefficients().normalizationSafety());
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
        MatrixInput.check(update);
        long rows = update.size(-2);
        long cols = update.size(-1);
        NsAlgorithm kernel = kernelFor(update, update.dim() == 3, Math.min(rows, cols), Math.max(rows, cols));
        return run(update, kernel, LIBTORCH_ONLY);
    }

    /**
     * Runs the plain iteration (the {@code GEMM} kernel, whatever {@code nsAlgorithm} says) on this
     * orthogonalizer's workspace, with the stages that {@code device} takes over and libtorch's ops for the rest.
     * With every stage declined the result is {@link #orthogonalize(Tensor)}'s under {@link NsAlgorithm#GEMM}, bit
     * for bit. muon-cuda reaches it through {@link NewtonSchulzAccess}, which documents the contract.
     *
     * @throws NullPointerException if {@code device} is null
     */
    Tensor orthogonalizeWith(Tensor update, NewtonSchulzKernels device) {
        MatrixInput.check(update);
        Objects.requireNonNull(device, "device must not be null");
        return run(update, NsAlgorithm.GEMM, device);
    }

    private Tensor run(Tensor update, NsAlgorithm kernel, NewtonSchulzKernels device) {
        boolean batched = update.dim() == 3;
        long rows = update.size(-2);
        long cols = update.size(-1);
        boolean tall = rows > cols;
        Tensor g = tall ? update.mT() : update;
        ShapeKernels kernels = kernelsFor(batched ? update.size(0) : 0, Math.min(rows, cols), Math.max(rows, cols),
                update.device());
        Workspace ws = kernels.ws;

        boolean openBlas = kernel != NsAlgorithm.GEMM && usesOpenBlas(update);
        BlasKernels blas = openBlas ? kernels.blas(config.nsPrecision() == NsPrecision.FLOAT64) : null;
        // The input's scale: PyTorch's Frobenius normalization into the workspace, or, with AOL, the input as it is
        // and the rescaling of the first Gram matrix inside the kernel.
        BiConsumer<Tensor, Tensor> precondition = null;
        if (config.nsPreconditioning() == NsPreconditioning.AOL) {
            if (openBlas) {
                // What BlasKernels.normalize does first: OpenBLAS's pool at libtorch's size.
                OpenBlas.followTorchThreads();
            }
            ws.x.copy_(g);
            precondition = this::aolRescale;
        } else if (openBlas) {
            if (!blas.normalize(update, tall, config)) {
                normalizeInto(ws.x, g);
            }
        } else if (kernel != NsAlgorithm.GEMM || !device.normalizeInto(ws.x, update)) {
            // A device's normalization stage serves the plain kernel only.
            normalizeInto(ws.x, g);
        }
        Tensor x = switch (kernel) {
            case GRAM -> openBlas ? blas.gram(config, precondition)
                    : kernels.gram().iterate(config.nsSteps(), linear, cubic, quintic, precondition);
            case SYMMETRIC -> openBlas ? blas.symmetric(config, precondition)
                    : kernels.symmetric().iterate(config.nsSteps(), linear, cubic, quintic, precondition);
            case AUTO, GEMM -> plain(ws, kernels.products, device, precondition);
        };
        return tall ? x.mT() : x;
    }

    /**
     * AOL's rescaling ({@link NsPreconditioning#AOL}), which every kernel calls right after it forms its first Gram
     * matrix {@code A = X·Xᵀ} of the unnormalized wide input, then running its whole schedule as it would (the
     * symmetric kernel's one-pass bfloat16 step fuses that product with the polynomial, so its first step runs on
     * the half products): {@code sᵢ = 1/√max(Σⱼ|Aᵢⱼ|, eps)}, then {@code X ← diag(s)·X} and
     * {@code A ← diag(s)·A·diag(s)}, each matrix of a batch on its own. Every kernel's first Gram matrix holds both
     * triangles here. The sums and factors are float32 (float64 for a float64 iteration), and each in-place product
     * computes in that dtype and rounds once to the iteration's: two bfloat16 roundings of {@code A} would leave it
     * further from {@code X·Xᵀ}, which the Gram kernel's {@code R₀} must stay.
     */
    private void aolRescale(Tensor a, Tensor x) {
        ScalarType wide = config.nsPrecision() == NsPrecision.FLOAT64 ? ScalarType.Double : ScalarType.Float;
        Tensor scale = a.abs().sum(LAST_DIM_ARRAY, false, new ScalarTypeOptional(wide)).clamp_min_(eps).rsqrt_();
        Tensor rows = scale.unsqueeze(-1);
        x.mul_(rows);
        a.mul_(rows.mul(scale.unsqueeze(-2)));
    }

    /**
     * The plain iteration from the workspace's {@code x}; a preconditioning, if any, is called as
     * {@code precondition.accept(A, X)} right after the first {@code A = X·Xᵀ} (AOL).
     */
    private Tensor plain(Workspace ws, MatrixProducts products, NewtonSchulzKernels device,
                         BiConsumer<Tensor, Tensor> precondition) {
        Tensor x = ws.x;
        Tensor next = ws.y;
        for (int k = 0; k < config.nsSteps(); k++) {
            if (!device.gramInto(ws.a, x)) {
                products.multiply(ws.a, x, x.mT());
            }
            if (k == 0 && precondition != null) {
                precondition.accept(ws.a, x);
            }
            if (!device.polynomialInto(ws.b, ws.a, k)) {
                polynomialInto(ws.b, ws.a, ws.t, k, products);
            }
            products.multiply(next, ws.b, x);
            Tensor done = x;
            x = next;
            next = done;
        }
        return x;
    }

    /** Whether this input's symmetric and Gram kernels run on OpenBLAS ({@link BlasKernels}): CPU, float32/64. */
    private boolean usesOpenBlas(Tensor update) {
        return openBlasServes(update.device().is_cpu(), config.nsPrecision());
    }

    private static boolean openBlasServes(boolean cpu, NsPrecision precision) {
        return cpu && precision != NsPrecision.BFLOAT16 && OpenBlas.isAvailable();
    }

    /**
     * The kernel that runs for this input: the documented {@link NsAlgorithm#AUTO} rule, and the fallback to
     * {@code GEMM} where an explicitly requested kernel cannot run.
     */
    NsAlgorithm kernelFor(Tensor update, boolean batched, long m, long n) {
        NsAlgorithm requested = config.nsAlgorithm();
        if (requested == NsAlgorithm.GEMM || batched) {
            return NsAlgorithm.GEMM;
        }
        if (requested == NsAlgorithm.GRAM) {
            return NsAlgorithm.GRAM;
        }
        if (requested == NsAlgorithm.SYMMETRIC) {
            return update.device().is_cpu() ? NsAlgorithm.SYMMETRIC : NsAlgorithm.GEMM;
        }
        return autoKernel(update.device().is_cpu(), config.nsPrecision(), m, n);
    }

    /**
     * The kernel that {@link NsAlgorithm#AUTO} picks for one matrix (not a batch): on a CPU, for at least
     * {@value #SYMMETRIC_MIN_ROWS} rows after the tall transpose, {@code GRAM} from an aspect ratio of
     * {@value #GRAM_MIN_ASPECT}, else {@code SYMMETRIC} in float32/float64 when OpenBLAS loads and in bfloat16
     * from {@value #BFLOAT16_NATIVE_SYMMETRIC_MIN_ROWS} rows where the native half product runs, from
     * {@value #BFLOAT16_SYMMETRIC_MIN_ROWS} rows where it does not; {@code GEMM} everywhere else.
     *
     * @param cpu       whether the matrix is on the CPU
     * @param precision the iteration's dtype
     * @param rows      the matrix's rows
     * @param cols      the matrix's columns
     * @return the kernel
     */
    public static NsAlgorithm autoKernel(boolean cpu, NsPrecision precision, long rows, long cols) {
        long m = Math.min(rows, cols);
        long n = Math.max(rows, cols);
        if (!cpu || m < SYMMETRIC_MIN_ROWS) {
            return NsAlgorithm.GEMM;
        }
        if (n >= GRAM_MIN_ASPECT * m) {
            return NsAlgorithm.GRAM;
        }
        if (openBlasServes(true, precision)
                || precision == NsPrecision.BFLOAT16 && m >= bfloat16SymmetricMinRows(NativeKernels.isAvailable())) {
            return NsAlgorithm.SYMMETRIC;
        }
        return NsAlgorithm.GEMM;
    }

    /** Where {@link NsAlgorithm#AUTO} starts the bfloat16 symmetric kernel, with or without the native kernel. */
    static int bfloat16SymmetricMinRows(boolean nativeKernel) {
        return nativeKernel ? BFLOAT16_NATIVE_SYMMETRIC_MIN_ROWS : BFLOAT16_SYMMETRIC_MIN_ROWS;
    }

    /**
     * The normalisation stage on libtorch ops: writes {@code g / max(s·‖g‖_F, eps)} into {@code out}, the norm
     * accumulated in float32 (float64 when {@code g} or the iteration is float64) and the quotient computed in the
     * norm's dtype before the cast to {@code out}'s.
     *
     * @param out the destination, of {@code g}'s shape (any float dtype)
     * @param g   the input matrix or batch of matrices (transposed views are fine)
     */
    void normalizeInto(Tensor out, Tensor g) {
        if (nativeNormalizeInto(out, g)) {
            return;
        }
        // ScalarType values are not singletons in the bindings: compare their codes.
        boolean wide64 = g.scalar_type().value == ScalarType.Double.value
                || config.nsPrecision() == NsPrecision.FLOAT64;
        ScalarType normType = wide64 ? ScalarType.Double : ScalarType.Float;
        Tensor norm = torch.linalg_vector_norm(g, two, LAST_TWO_DIMS, true, new ScalarTypeOptional(normType));
        if (config.nsCoefficients().normalizationSafety() != 1.0) {
            norm.mul_(normSafety);
        }
        norm.clamp_min_(eps);
        // The norm is a [.., 1, 1] tensor, not a 0-dim one, so type promotion computes the quotient in its dtype
        // (float32 at least) before the cast to the iteration's dtype.
        torch.div_out(out, g, norm);
    }

    /**
     * The normalisation of a bfloat16 matrix on the CPU by the native kernel ({@link NativeKernels#bfloat16Normalize}:
     * two passes over bfloat16 where libtorch makes four over float32 copies), where it runs and serves the layout:
     * a matrix, {@code out} contiguous, {@code g} contiguous or the transposed view of a contiguous tall matrix.
     *
     * @return whether it wrote {@code out}; false leaves it to libtorch's ops
     */
    private boolean nativeNormalizeInto(Tensor out, Tensor g) {
        if (config.nsPrecision() != NsPrecision.BFLOAT16 || g.dim() != 2 || !g.device().is_cpu()
                || g.scalar_type().value != ScalarType.BFloat16.value
                || out.scalar_type().value != ScalarType.BFloat16.value || !out.is_contiguous()
                || g.numel() == 0 || g.numel() > Integer.MAX_VALUE) {
            return false;
        }
        boolean transposed = !g.is_contiguous();
        if (transposed && !g.mT().is_contiguous()) {
            return false;
        }
        NativeKernels.Variant variant = NativeKernels.variant().orElse(null);
        if (variant == null) {
            return false;
        }
        return NativeKernels.bfloat16Normalize(variant.code, g.data_ptr().address(), (int) g.size(0),
                (int) g.size(1), transposed, out.data_ptr().address(), torch.get_num_threads(),
                config.nsCoefficients().normalizationSafety(), config.eps());
    }

    /**
     * The polynomial stage of step {@code step} on libtorch ops: {@code b = a·I + A·(c·A + b·I)}, which is the
     * reference's {@code a·I + b·A + c·A²}, with the scalar terms added on diagonals so that the only product is a
     * plain GEMM.
     *
     * @param out      the destination {@code B}, {@code [batch,] m × m}
     * @param gram     the Gram matrix {@code A}, same shape, read only
     * @param scratch  a buffer of the same shape, overwritten
     * @param step     the zero-based step, which selects the coefficients
     * @param products the products of this shape ({@link ShapeKernels#products})
     */
    private void polynomialInto(Tensor out, Tensor gram, Tensor scratch, int step, MatrixProducts products) {
        torch.mul_out(scratch, gram, quintic[step]);
        scratch.diagonal(0, -2, -1).add_(cubic[step]);
        products.multiply(out, gram, scratch);
        out.diagonal(0, -2, -1).add_(linear[step]);
    }

    private ShapeKernels kernelsFor(long batch, long m, long n, Device device) {
        ScalarType dtype = config.nsPrecision().scalarType();
        Workspace.Key key = new Workspace.Key(batch, m, n, dtype.value, device.type().value, device.index());
        return byShape.computeIfAbsent(key, k -> new ShapeKernels(new Workspace(batch, m, n, dtype, device)));
    }

    private static Scalar scalar(double value) {
        return NativeLifetime.outliveScope(new Scalar(value));
    }
}
