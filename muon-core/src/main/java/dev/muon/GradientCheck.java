package dev.muon;

import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.Arrays;

/**
 * The one rule for a gradient that a step may use, shared by {@link Muon} and {@link MuonAdamW}: dense, real, and
 * of its parameter's shape, dtype and device. Steps run it over every gradient before anything changes, so a
 * rejected step is never half applied; libtorch itself would promote a gradient of another dtype, or fail midway
 * through a step with a message that names no parameter.
 */
final class GradientCheck {
    private GradientCheck() {
    }

    /**
     * The gradient a step may apply to {@code param}, or null when it has none (the parameter is skipped).
     *
     * @param param     the parameter
     * @param optimizer the optimizer's name, for messages
     * @param label     how to name the parameter in a message, e.g. {@code parameter 'fc1.weight'}
     * @return the gradient, or null
     * @throws UnsupportedOperationException if the gradient is sparse or complex
     * @throws IllegalStateException         if its shape, dtype or device differs from the parameter's
     */
    static Tensor usable(Tensor param, String optimizer, String label) {
        Tensor grad = param.grad();
        if (!grad.defined()) {
            return null;
        }
        if (grad.is_sparse()) {
            throw new UnsupportedOperationException(
                    optimizer + " does not support sparse gradients; " + label + " has a sparse gradient");
        }
        if (grad.layout().value != torch.Layout.Strided.value) {
            throw new UnsupportedOperationException(optimizer + " supports dense (strided) gradients only; " + label
                    + " has a gradient of layout " + grad.layout());
        }
        if (grad.is_complex()) {
            throw new UnsupportedOperationException(
                    optimizer + " does not support complex gradients; " + label + " has dtype " + grad.scalar_type());
        }
        if (!Arrays.equals(grad.shape(), param.shape())) {
            throw new IllegalStateException("the gradient of " + label + " has shape "
                    + Arrays.toString(grad.shape()) + " but the parameter has shape "
                    + Arrays.toString(param.shape()));
        }
        if (grad.scalar_type().value != param.scalar_type().value) {
            throw new IllegalStateException("the gradient of " + label + " has dtype " + grad.scalar_type()
                    + " but the parameter has dtype " + param.scalar_type()
                    + "; a gradient must have its parameter's dtype");
        }
        if (!grad.device().equals(param.device())) {
            throw new IllegalStateException("the gradient of " + label + " is on " + grad.device().str().getString()
                    + " but the parameter is on " + param.device().str().getString()
                    + "; a gradient must be on its parameter's device");
        }
        return grad;
    }
}
