package dev.muon.cuda.internal;

import dev.muon.cuda.CudaSupport;
import dev.muon.cuda.FusedUpdates;
import dev.muon.internal.TorchNatives;
import dev.muon.internal.FusedUpdateKernels;
import dev.muon.internal.FusedUpdateKernelsProvider;
import dev.muon.internal.SystemSwitch;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Registers {@link FusedUpdates} with muon-core's Muon through {@link java.util.ServiceLoader}
 * ({@code META-INF/services/dev.muon.internal.FusedUpdateKernelsProvider}): with muon-cuda on the class path, the
 * momentum
 * (with the Nesterov blend and the bfloat16 cast) and the parameter update of a served parameter run as one kernel
 * each, with no change to user code. Public only because ServiceLoader needs a public provider on the class path;
 * not API (see this package).
 *
 * <p>It serves a parameter when {@link CudaSupport#isAvailable()}, the parameter is a contiguous float32 CUDA
 * tensor and the update dtype is bfloat16 ({@code nsPrecision} {@code BFLOAT16}): the kernels' types. Otherwise it
 * returns empty and Muon keeps libtorch's ops for that parameter (muon-core logs that once). At each call the stages
 * decline, and libtorch's ops run, where a tensor is not contiguous or not 16-byte aligned (the transposed update of
 * a tall parameter; a slice of a same-shape batch's stack whose size is not a multiple of 8 elements), so a served
 * parameter never meets the kernels' launch checks. {@code -D}{@value CudaSupport#DISABLE_FUSED_UPDATES_PROPERTY}
 * {@code =true}, read when an optimizer is built, serves nothing.
 *
 * <p>One instance serves one optimizer's build (ServiceLoader makes a provider per load), and shares one
 * {@link FusedUpdates} per device among that optimizer's parameters: like the optimizer, not thread-safe.
 */
public final class CudaFusedUpdateKernelsProvider implements FusedUpdateKernelsProvider {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private static final System.Logger LOG = System.getLogger(CudaFusedUpdateKernelsProvider.class.getName());
    private static volatile boolean fallbackLogged;

    private final Map<Integer, Stages> byDevice = new HashMap<>();

    /** Called by {@link java.util.ServiceLoader}. */
    public CudaFusedUpdateKernelsProvider() {
    }

    /**
     * The fused stages for a contiguous float32 CUDA parameter whose update dtype is bfloat16.
     *
     * @param matrix     the parameter's matrix view
     * @param updateType the update dtype ({@code nsPrecision})
     * @return the stages, or empty for other devices, dtypes or layouts, when CUDA is unavailable, when the
     *         kernels fail to load, or when {@value CudaSupport#DISABLE_FUSED_UPDATES_PROPERTY} is set
     */
    @Override
    public Optional<FusedUpdateKernels> forParameter(Tensor matrix, ScalarType updateType) {
        if (SystemSwitch.isOn(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY) || matrix == null || !matrix.defined()
                || !matrix.is_cuda() || !CudaSupport.isAvailable()
                || matrix.scalar_type().value != ScalarType.Float.value
                || updateType.value != ScalarType.BFloat16.value
                || !matrix.is_contiguous()) {
            return Optional.empty();
        }
        int index = matrix.device().index();
        try {
            return Optional.of(byDevice.computeIfAbsent(index, i -> new Stages(
                    new FusedUpdates(new Device(torch.DeviceType.CUDA, (byte) (int) i)), i)));
        } catch (RuntimeException e) {
            // A driver that refuses the kernels (say, a fatbin with no image for this GPU) must not stop training.
            if (!fallbackLogged) {
                fallbackLogged = true;
                LOG.log(System.Logger.Level.INFO, "muon-cuda: the momentum and parameter update run on libtorch ops "
                        + "because loading the fused kernels on cuda:" + index + " failed (" + e.getMessage()
                        + "); run with -D" + CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY + "=true to skip them");
            }
            return Optional.empty();
        }
    }

    /** The two stages on one device's {@link FusedUpdates}, declining what the kernels do not take. */
    private static final class Stages implements FusedUpdateKernels {
        private final FusedUpdates fused;
        private final int device;

        Stages(FusedUpdates fused, int device) {
            this.fused = fused;
            this.device = device;
        }

        @Override
        public boolean momentumInto(Tensor out, Tensor buffer, Tensor grad, double momentum, boolean nesterov) {
            if (!takes(out, ScalarType.BFloat16) || !takes(buffer, ScalarType.Float) || !takes(grad, ScalarType.Float)
                    || !(momentum >= 0 && momentum < 1)) {
                return false;
            }
            fused.momentum(buffer, grad, out, momentum, nesterov);
            return true;
        }

        @Override
        public boolean updateParameter(Tensor param, Tensor update, double decay, double alpha) {
            if (!takes(param, ScalarType.Float) || !takes(update, ScalarType.BFloat16)) {
                return false;
            }
            fused.parameterUpdate(param, update, decay, alpha);
            return true;
        }

        /** What the kernels' launch checks demand of every operand: the dtype, this device, contiguous, 16-byte
         * aligned. */
        private boolean takes(Tensor t, ScalarType dtype) {
            return t.scalar_type().value == dtype.value && t.is_cuda() && t.device().index() == device
                    && t.is_contiguous() && t.data_ptr().address() % 16 == 0;
        }
    }
}
