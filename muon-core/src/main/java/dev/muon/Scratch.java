package dev.muon;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Reusable tensors of one optimizer, one per shape, dtype and device: the Nesterov blend's output, the fused
 * momentum stage's {@code U}, bfloat16 momentum's float32 copy. A stage uses one within its call, so parameters of
 * one shape share it.
 */
final class Scratch {
    private final Map<String, Tensor> buffers = new HashMap<>();

    /**
     * A reusable tensor of {@code like}'s shape and device in {@code dtype}; in {@code like}'s own dtype it keeps
     * {@code like}'s strides, as the Nesterov blend always had them (the norm of a differently laid out {@code U}
     * could sum in another order).
     */
    Tensor like(Tensor like, ScalarType dtype) {
        String key = Arrays.toString(like.shape()) + dtype.value + ":" + like.device().type().value
                + ":" + like.device().index();
        return buffers.computeIfAbsent(key, k -> NativeLifetime.outliveScope(
                dtype.value == like.scalar_type().value ? torch.empty_like(like) : torch.empty(like.shape(),
                        new TensorOptions(dtype).device(new DeviceOptional(like.device())), null)));
    }
}
