package dev.muon.cuda;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.cuda.cudart.CUctx_st;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch_cuda;

import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.bytedeco.cuda.global.cudart.CUDA_SUCCESS;
import static org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
import static org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
import static org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
import static org.bytedeco.cuda.global.cudart.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
import static org.bytedeco.cuda.global.cudart.cuCtxGetCurrent;
import static org.bytedeco.cuda.global.cudart.cuCtxSetCurrent;
import static org.bytedeco.cuda.global.cudart.cuDeviceGet;
import static org.bytedeco.cuda.global.cudart.cuDeviceGetAttribute;
import static org.bytedeco.cuda.global.cudart.cuDevicePrimaryCtxRetain;
import static org.bytedeco.cuda.global.cudart.cuFuncSetAttribute;
import static org.bytedeco.cuda.global.cudart.cuGetErrorString;
import static org.bytedeco.cuda.global.cudart.cuLaunchKernel;
import static org.bytedeco.cuda.global.cudart.cuModuleGetFunction;
import static org.bytedeco.cuda.global.cudart.cuModuleLoadData;

/**
 * Launches the kernels of {@code src/main/cuda} through the CUDA driver API on libtorch's current stream of
 * one device, after {@link LaunchChecks} has accepted every argument.
 *
 * <p>The fatbins are class-path resources written by the Maven build (nvcc); each is loaded once per device
 * with {@code cuModuleLoadData} into the device's primary context, the one libtorch's runtime uses. A launcher
 * owns its argument slots ({@link KernelArgs}), so a launch allocates nothing native; launchers are not
 * thread-safe, the loaded modules are shared.
 *
 * <p>Callers hold a {@code CUDAGuard} for {@link #device()} (and a {@link PointerScope}) around launches.
 */
// PointerScope and CUDAGuard work by existing: their try blocks never name them.
@SuppressWarnings("try")
final class CudaKernels {
    /** Resource of the portable symmetric kernel (sm_80, sm_90, compute_90 PTX). */
    static final String SYMMETRIC_IMAGE = "dev/muon/cuda/ns_symmetric.fatbin";
    /** Resource of the Hopper symmetric kernel (sm_90a only). */
    static final String SYMMETRIC_SM90_IMAGE = "dev/muon/cuda/ns_symmetric_sm90.fatbin";
    /** Resource of the memory-bound kernels. */
    static final String ELEMENTWISE_IMAGE = "dev/muon/cuda/ns_elementwise.fatbin";
    /** Every image the jar must hold for the kernels to be usable. */
    static final String[] IMAGES = {SYMMETRIC_IMAGE, SYMMETRIC_SM90_IMAGE, ELEMENTWISE_IMAGE};

    /** Threads per block of every kernel (8 warps; two warpgroups for the sm_90a kernel). */
    static final int THREADS = 256;
    /** Dynamic shared memory of the sm_90a kernel: five stages of two 128 x 64 bf16 tiles, +1 KB for alignment. */
    static final int SM90_SHARED_BYTES = 5 * 2 * 128 * 64 * 2 + 1024;
    /** Upper bound of the per-matrix partial sums of the norm kernel (and the reducing loop of the next). */
    static final int MAX_NORM_PARTS = 1024;

    private static final Map<Integer, Functions> LOADED = new ConcurrentHashMap<>();

    private final int device;
    private final Functions fn;
    private final KernelArgs symArgs = new KernelArgs("PPPIIJJJFFF");
    private final KernelArgs sumsqArgs = new KernelArgs("PJJP");
    private final KernelArgs scaleArgs = new KernelArgs("PPJJPIFF");
    private final KernelArgs scaleTArgs = new KernelArgs("PPIIJPIFF");
    private final KernelArgs momentumArgs = new KernelArgs("PPPJFFI");
    private final KernelArgs updateArgs = new KernelArgs("PPJFF");

    /**
     * A launcher for {@code device}, loading the kernels there at the first use of the device.
     *
     * @param device the CUDA device index
     * @throws UnsupportedOperationException if {@link CudaSupport#isAvailable()} is false
     * @throws IllegalStateException         if a module cannot be loaded
     */
    CudaKernels(int device) {
        CudaSupport.ensureAvailable();
        this.device = device;
        this.fn = LOADED.computeIfAbsent(device, Functions::load);
    }

    /**
     * The device these kernels run on.
     *
     * @return the CUDA device index
     */
    int device() {
        return device;
    }

    /**
     * The device's compute capability, {@code major * 10 + minor}.
     *
     * @return e.g. 90 for an H100
     */
    int computeCapability() {
        return fn.major * 10 + fn.minor;
    }

    /**
     * Whether the sm_90a (wgmma) symmetric kernel loaded on this device.
     *
     * @return true on compute capability 9.0
     */
    boolean hasHopperKernel() {
        return fn.symmetricSm90 != null;
    }

    /**
     * {@code c = alpha p pᵀ + beta s + diag I}, upper-triangle tiles only, mirrored.
     *
     * @param p      {@code [batch,] m × k} bfloat16
     * @param s      {@code [batch,] m × m} bfloat16 symmetric, or null (then {@code beta} is ignored)
     * @param c      {@code [batch,] m × m} bfloat16, written
     * @param alpha  scale of the product
     * @param beta   scale of {@code s}
     * @param diag   added to the diagonal
     * @param hopper whether to run the sm_90a kernel (requires {@link #hasHopperKernel()})
     * @throws IllegalArgumentException if an argument breaks the kernel's preconditions
     */
    void symmetric(Tensor p, Tensor s, Tensor c, double alpha, double beta, double diag, boolean hopper) {
        Operand op = Operand.of("p", p);
        Operand os = s == null ? null : Operand.of("s", s);
        Operand oc = Operand.of("c", c);
        LaunchChecks.symmetric(op, os, oc, device);
        if (hopper && fn.symmetricSm90 == null) {
            throw new IllegalArgumentException("hopper must be false on compute capability "
                    + fn.major + "." + fn.minor + ", got true (the sm_90a kernel runs on 9.0 only)");
        }
        long m = op.size(-2);
        long k = op.size(-1);
        long batch = op.shape().length == 3 ? op.size(0) : 1;
        symArgs.setLong(0, op.address()).setLong(1, os == null ? 0 : os.address()).setLong(2, oc.address())
                .setInt(3, (int) m).setInt(4, (int) k)
                .setLong(5, m * k).setLong(6, m * m).setLong(7, m * m)
                .setFloat(8, (float) alpha).setFloat(9, os == null ? 0f : (float) beta).setFloat(10, (float) diag);
        launch(hopper ? fn.symmetricSm90 : fn.symmetric, "muon_sym_gemm_bf16",
                TriangleTiles.blockCount(m), 1, (int) batch, hopper ? SM90_SHARED_BYTES : 0, symArgs);
    }

    /**
     * {@code x = g / max(safety ‖g‖_F, eps)} in bfloat16, per matrix, transposed when {@code g} is tall.
     *
     * @param g        {@code [batch,] rows × cols}, float32 or bfloat16
     * @param x        {@code [batch,] min × max} bfloat16, written
     * @param partials float32 scratch of at least {@code batch · MAX_NORM_PARTS} elements
     * @param safety   the schedule's normalisation safety
     * @param eps      the norm's floor
     * @throws IllegalArgumentException if an argument breaks the kernels' preconditions
     */
    void normalize(Tensor g, Tensor x, Tensor partials, double safety, double eps) {
        Operand og = Operand.of("g", g);
        Operand ox = Operand.of("x", x);
        Operand otmp = Operand.of("partials", partials);
        long count = og.size(-2) * og.size(-1);
        int parts = normParts(count);
        LaunchChecks.normalize(og, ox, otmp, parts, device);
        int rows = (int) og.size(-2);
        int cols = (int) og.size(-1);
        int batch = og.shape().length == 3 ? (int) og.size(0) : 1;
        boolean bf16 = og.dtype() == ScalarType.BFloat16.value;
        sumsqArgs.setLong(0, og.address()).setLong(1, count).setLong(2, count).setLong(3, otmp.address());
        launch(bf16 ? fn.sumsqBf16 : fn.sumsqF32, "muon_sumsq", parts, batch, 1, 0, sumsqArgs);
        if (rows > cols) {
            scaleTArgs.setLong(0, og.address()).setLong(1, ox.address()).setInt(2, rows).setInt(3, cols)
                    .setLong(4, count).setLong(5, otmp.address()).setInt(6, parts)
                    .setFloat(7, (float) safety).setFloat(8, (float) eps);
            launch(bf16 ? fn.scaleTBf16 : fn.scaleTF32, "muon_scale_cast_t", (cols + 31) / 32, (rows + 31) / 32,
                    batch, 0, scaleTArgs);
        } else {
            scaleArgs.setLong(0, og.address()).setLong(1, ox.address()).setLong(2, count).setLong(3, count)
                    .setLong(4, otmp.address()).setInt(5, parts).setFloat(6, (float) safety).setFloat(7, (float) eps);
            launch(bf16 ? fn.scaleBf16 : fn.scaleF32, "muon_scale_cast", gridFor(count), batch, 1, 0, scaleArgs);
        }
    }

    /**
     * {@code B = lerp(B, g, 1 − μ)}; {@code out = bf16(nesterov ? lerp(g, B, μ) : B)}, one pass.
     *
     * @param buffer   float32 momentum buffer, updated in place
     * @param grad     float32 gradient
     * @param out      bfloat16 update, written
     * @param momentum μ in [0, 1)
     * @param nesterov whether to apply the Nesterov look-ahead
     * @throws IllegalArgumentException if an argument breaks the kernel's preconditions
     */
    void momentum(Tensor buffer, Tensor grad, Tensor out, double momentum, boolean nesterov) {
        Operand ob = Operand.of("buffer", buffer);
        Operand og = Operand.of("grad", grad);
        Operand oo = Operand.of("out", out);
        LaunchChecks.momentum(ob, og, oo, momentum, device);
        long n = ob.numel();
        momentumArgs.setLong(0, ob.address()).setLong(1, og.address()).setLong(2, oo.address()).setLong(3, n)
                // 1 − μ in double, then rounded once: the weight libtorch's lerp_ gets from Scalar(1 − μ).
                .setFloat(4, (float) (1 - momentum)).setFloat(5, (float) momentum).setInt(6, nesterov ? 1 : 0);
        launch(fn.momentum, "muon_momentum_f32", gridFor(n), 1, 1, 0, momentumArgs);
    }

    /**
     * {@code p = decay · p + alpha · o}, one pass.
     *
     * @param param  float32 parameter, updated in place
     * @param update bfloat16 orthogonalized update
     * @param decay  {@code 1 − lr · weightDecay}
     * @param alpha  the signed, scaled learning rate
     * @throws IllegalArgumentException if an argument breaks the kernel's preconditions (decay and alpha finite in
     *                                  float32 among them)
     */
    void parameterUpdate(Tensor param, Tensor update, double decay, double alpha) {
        Operand op = Operand.of("param", param);
        Operand ou = Operand.of("update", update);
        LaunchChecks.parameterUpdate(op, ou, decay, alpha, device);
        long n = op.numel();
        updateArgs.setLong(0, op.address()).setLong(1, ou.address()).setLong(2, n)
                .setFloat(3, (float) decay).setFloat(4, (float) alpha);
        launch(fn.update, "muon_param_update_f32", gridFor(n), 1, 1, 0, updateArgs);
    }

    /**
     * Partial sums per matrix for the norm: enough blocks to fill the device, each with at least 4096
     * elements, and at most {@link #MAX_NORM_PARTS} so that the scaling kernel reduces them cheaply.
     *
     * @param count elements per matrix
     * @return the number of partial sums
     */
    static int normParts(long count) {
        return (int) Math.max(1, Math.min(MAX_NORM_PARTS, count / (THREADS * 16L)));
    }

    private int gridFor(long count) {
        // Grid-stride loops: a few waves of blocks are enough to saturate memory bandwidth.
        long blocks = (count + THREADS - 1) / THREADS;
        return (int) Math.max(1, Math.min(blocks, (long) fn.multiprocessors * 16));
    }

    private void launch(CUfunc_st f, String name, int gx, int gy, int gz, int shared, KernelArgs args) {
        try (PointerScope scope = new PointerScope()) {
            fn.makeCurrent();
            CUstream_st stream = torch_cuda.getCurrentCUDAStream((byte) device).stream();
            check(cuLaunchKernel(f, gx, gy, gz, THREADS, 1, 1, shared, stream, args.params(), null),
                    "cuLaunchKernel(" + name + ")");
        }
    }

    /**
     * Turns a failed driver call into an exception carrying the driver's own message.
     *
     * @param result the CUresult
     * @param call   what was called, for the message
     * @throws IllegalStateException if {@code result} is not {@code CUDA_SUCCESS}
     */
    static void check(int result, String call) {
        if (result != CUDA_SUCCESS) {
            try (PointerScope scope = new PointerScope()) {
                BytePointer message = new BytePointer((org.bytedeco.javacpp.Pointer) null);
                cuGetErrorString(result, message);
                String text = message.isNull() ? "unknown error" : message.getString();
                throw new IllegalStateException(call + " failed with CUresult " + result + " (" + text + ")");
            }
        }
    }

    /** The loaded functions of one device, shared by all launchers of that device. */
    private static final class Functions {
        final CUctx_st context;
        final int major;
        final int minor;
        final int multiprocessors;
        final CUfunc_st symmetric;
        final CUfunc_st symmetricSm90;
        final CUfunc_st sumsqF32;
        final CUfunc_st sumsqBf16;
        final CUfunc_st scaleF32;
        final CUfunc_st scaleBf16;
        final CUfunc_st scaleTF32;
        final CUfunc_st scaleTBf16;
        final CUfunc_st momentum;
        final CUfunc_st update;

        private Functions(int device) {
            try (PointerScope scope = new PointerScope()) {
                IntPointer handle = new IntPointer(1);
                check(cuDeviceGet(handle, device), "cuDeviceGet(" + device + ")");
                int dev = handle.get();
                // libtorch's runtime works in the primary context; the modules must live there too.
                context = NativeLifetime.outliveScope(new CUctx_st());
                check(cuDevicePrimaryCtxRetain(context, dev), "cuDevicePrimaryCtxRetain(" + device + ")");
                makeCurrent();
                IntPointer value = new IntPointer(1);
                check(cuDeviceGetAttribute(value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
                major = value.get();
                check(cuDeviceGetAttribute(value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
                minor = value.get();
                check(cuDeviceGetAttribute(value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
                multiprocessors = value.get();

                CUmod_st sym = module(SYMMETRIC_IMAGE);
                symmetric = function(sym, "muon_sym_gemm_bf16");
                if (major == 9 && minor == 0) {
                    CUmod_st sym90 = module(SYMMETRIC_SM90_IMAGE);
                    symmetricSm90 = function(sym90, "muon_sym_gemm_bf16_sm90");
                    // Past 48 KB, dynamic shared memory must be allowed explicitly, once per function.
                    check(cuFuncSetAttribute(symmetricSm90, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            SM90_SHARED_BYTES), "cuFuncSetAttribute(muon_sym_gemm_bf16_sm90)");
                } else {
                    symmetricSm90 = null;
                }
                CUmod_st ew = module(ELEMENTWISE_IMAGE);
                sumsqF32 = function(ew, "muon_sumsq_f32");
                sumsqBf16 = function(ew, "muon_sumsq_bf16");
                scaleF32 = function(ew, "muon_scale_cast_f32");
                scaleBf16 = function(ew, "muon_scale_cast_bf16");
                scaleTF32 = function(ew, "muon_scale_cast_t_f32");
                scaleTBf16 = function(ew, "muon_scale_cast_t_bf16");
                momentum = function(ew, "muon_momentum_f32");
                update = function(ew, "muon_param_update_f32");
            }
        }

        static Functions load(int device) {
            return new Functions(device);
        }

        void makeCurrent() {
            try (PointerScope scope = new PointerScope()) {
                CUctx_st current = new CUctx_st();
                check(cuCtxGetCurrent(current), "cuCtxGetCurrent");
                if (current.address() != context.address()) {
                    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
                }
            }
        }

        private static CUmod_st module(String resource) {
            byte[] image = readResource(resource);
            CUmod_st module = NativeLifetime.outliveScope(new CUmod_st());
            BytePointer data = new BytePointer(image.length + 1L);
            data.put(image, 0, image.length).put(image.length, (byte) 0);
            check(cuModuleLoadData(module, data), "cuModuleLoadData(" + resource + ")");
            return module;
        }

        private static CUfunc_st function(CUmod_st module, String name) {
            CUfunc_st f = NativeLifetime.outliveScope(new CUfunc_st());
            check(cuModuleGetFunction(f, module, name), "cuModuleGetFunction(" + name + ")");
            return f;
        }
    }

    /**
     * Reads a kernel image from the class path.
     *
     * @param resource the resource name
     * @return its bytes
     * @throws IllegalStateException if it is missing or unreadable
     */
    static byte[] readResource(String resource) {
        try (InputStream in = CudaKernels.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("class-path resource " + resource + " is missing: muon-cuda was "
                        + "built without nvcc");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException("cannot read class-path resource " + resource, e);
        }
    }
}
