package dev.muon;

import dev.muon.internal.FusedUpdateKernels;
import dev.muon.internal.FusedUpdateKernelsProvider;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * A test {@link FusedUpdateKernelsProvider}, registered in muon-core's test {@code META-INF/services}: CPU stages on
 * plain libtorch ops in another formulation than {@link Muon}'s ({@code μ·B + (1 − μ)·g} with {@code mul}/{@code
 * add} instead of {@code lerp}; the update converted to the parameter's dtype and scaled before the add), which
 * record every call.
 *
 * <p>It is on the class path of every muon-core test, so it serves nothing unless the current thread has switched
 * it on with {@link #serving}: Muon asks providers only while it is built, so every other test, and every optimizer
 * built outside the switch, keeps libtorch's ops bit for bit. Like muon-cuda's stages, it declines a call whose
 * {@code update} is not contiguous (the transposed result for a tall parameter).
 */
public final class RecordingFusedKernelsProvider implements FusedUpdateKernelsProvider {
    private static final ThreadLocal<Recorder> ACTIVE = new ThreadLocal<>();

    /** Called by {@link java.util.ServiceLoader}. */
    public RecordingFusedKernelsProvider() {
    }

    /**
     * Switches the provider on for this thread until {@link Recorder#close()}: it serves the parameters that
     * {@code serves} accepts, with the update dtype they are offered.
     */
    static Recorder serving(Predicate<Tensor> serves) {
        Recorder recorder = new Recorder(serves);
        ACTIVE.set(recorder);
        return recorder;
    }

    @Override
    public Optional<FusedUpdateKernels> forParameter(Tensor matrix, ScalarType updateType) {
        Recorder recorder = ACTIVE.get();
        if (recorder == null) {
            return Optional.empty();
        }
        recorder.asked++;
        recorder.updateTypes.add(updateType.value);
        return recorder.serves.test(matrix) ? Optional.of(recorder.stages) : Optional.empty();
    }

    /** What the provider was asked and did on this thread; closing it switches the provider off. */
    static final class Recorder implements AutoCloseable {
        final Predicate<Tensor> serves;
        final List<Byte> updateTypes = new ArrayList<>();
        final List<Byte> momentumOutTypes = new ArrayList<>();
        int asked;
        int momentumCalls;
        int updateCalls;
        int updatesDeclined;
        /** The update call (1-based) that throws, as a device kernel that fails would; 0 for none. */
        int failingUpdateCall;
        final FusedUpdateKernels stages = new FusedUpdateKernels() {
            @Override
            public boolean momentumInto(Tensor out, Tensor buffer, Tensor grad, double momentum, boolean nesterov) {
                momentumCalls++;
                momentumOutTypes.add(out.scalar_type().value);
                buffer.mul_(new Scalar(momentum)).add_(grad, new Scalar(1 - momentum));
                out.copy_(nesterov ? grad.mul(new Scalar(1 - momentum)).add_(buffer, new Scalar(momentum)) : buffer);
                return true;
            }

            @Override
            public boolean updateParameter(Tensor param, Tensor update, double decay, double alpha) {
                if (!update.is_contiguous()) {
                    updatesDeclined++;
                    return false;
                }
                updateCalls++;
                if (updateCalls == failingUpdateCall) {
                    throw new IllegalStateException("simulated device failure in update call " + updateCalls);
                }
                param.mul_(new Scalar(decay)).add_(update.to(param.scalar_type()).mul_(new Scalar(alpha)));
                return true;
            }
        };

        private Recorder(Predicate<Tensor> serves) {
            this.serves = serves;
        }

        @Override
        public void close() {
            ACTIVE.remove();
        }
    }
}
