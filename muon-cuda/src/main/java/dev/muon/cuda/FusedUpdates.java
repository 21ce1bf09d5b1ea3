package dev.muon.cuda;

import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.cuda.CUDAGuard;

/**
 * The two memory-bound stages of a Muon step around the orthogonalization, each one pass over memory:
 *
 * <pre>
 *   momentum:        B = lerp(B, g, 1 − μ);  U = nesterov ? lerp(g, B, μ) : B;  out = bf16(U)
 *   parameterUpdate: p = decay · p + alpha · o          (decay = 1 − lr·weightDecay, alpha = −scaled lr)
 * </pre>
 *
 * libtorch needs three kernels (two lerps and a cast) for the first and two for the second; measured
 * speed-ups are in {@code docs/cuda.md}. Float32 parameters and buffers, bfloat16 updates, contiguous tensors
 * on this instance's device; every argument is checked before the launch.
 *
 * <pre>{@code
 * FusedUpdates fused = new FusedUpdates(new Device("cuda:0"));
 * fused.momentum(buffer, grad, momentumBf16, 0.95, true);
 * fused.parameterUpdate(param, orthogonalized, 1 - lr * wd, -lr * scale);
 * }</pre>
 *
 * <p>Not thread-safe (the launch arguments are reused).
 */
// PointerScope and CUDAGuard work by existing: their try blocks never name them.
@SuppressWarnings("try")
public final class FusedUpdates {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private final int deviceIndex;
    private final CudaKernels kernels;

    /**
     * Loads the kernels on {@code device}.
     *
     * @param device a CUDA device
     * @throws IllegalArgumentException      if {@code device} is not a CUDA device
     * @throws UnsupportedOperationException if {@link CudaSupport#isAvailable()} is false
     */
    public FusedUpdates(Device device) {
        this.deviceIndex = CudaSupport.kernelDeviceIndex(device);
        this.kernels = new CudaKernels(deviceIndex);
    }

    /**
     * Updates the momentum buffer and writes the (Nesterov) update in bfloat16.
     *
     * @param buffer   float32 momentum buffer, updated in place
     * @param grad     float32 gradient, same shape
     * @param out      bfloat16 output, same shape
     * @param momentum μ, in [0, 1)
     * @param nesterov whether to look ahead
     * @throws IllegalArgumentException if a tensor has the wrong dtype, shape, layout or device, or μ is out of range
     */
    public void momentum(Tensor buffer, Tensor grad, Tensor out, double momentum, boolean nesterov) {
        try (PointerScope scope = new PointerScope(); CUDAGuard guard = new CUDAGuard((byte) deviceIndex)) {
            kernels.momentum(buffer, grad, out, momentum, nesterov);
        }
    }

    /**
     * Applies decoupled decay and the scaled update to a parameter.
     *
     * @param param  float32 parameter, updated in place
     * @param update bfloat16 orthogonalized update, same shape
     * @param decay  multiplier of the parameter, {@code 1 − lr·weightDecay}
     * @param alpha  multiplier of the update (negative to descend)
     * @throws IllegalArgumentException if a tensor has the wrong dtype, shape, layout or device, or decay or alpha is
     *                                  not finite in float32
     */
    public void parameterUpdate(Tensor param, Tensor update, double decay, double alpha) {
        try (PointerScope scope = new PointerScope(); CUDAGuard guard = new CUDAGuard((byte) deviceIndex)) {
            kernels.parameterUpdate(param, update, decay, alpha);
        }
    }
}
