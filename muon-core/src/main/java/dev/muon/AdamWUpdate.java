package dev.muon;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * libtorch's AdamW update of one parameter ({@code torch::optim::AdamW::step}, AMSGrad off): the same tensor
 * operations with the same scalars, in the same order and dtype, so that a parameter and its moments come out bit
 * for bit as libtorch's AdamW leaves them:
 * <pre>
 *   p = p·(1 − lr·weightDecay)                  (when weightDecay ≠ 0)
 *   m = m·β1 + (1 − β1)·g;   v = v·β2 + (1 − β2)·g·g
 *   D = sqrt(v) / sqrt(1 − β2^t) + eps          (t: the parameter's update count, this one included)
 *   p = p − lr / (1 − β1^t) · m / D
 * </pre>
 * One thing differs: {@code D} is formed in a tensor the caller reuses, where libtorch's step makes two new tensors
 * of the parameter's size for every parameter and step (the square root and the quotient). The allocator hands
 * blocks that large back to the system when they are freed, so each step used to touch that memory again, page by
 * page: about 12,000 page faults per step on the GPT-2-small-width set. A steady step here takes no memory.
 *
 * <p>The powers {@code β^t} come from the C library's {@code pow}, as libtorch's C++ and PyTorch's Python take
 * them, evaluated on one-element libtorch tensors ({@link #power}); Java's {@code Math.pow} differs from it in the
 * last bit for about one (β, t) pair in a thousand.
 */
final class AdamWUpdate {
    private AdamWUpdate() {
    }

    /**
     * The bias corrections of one update count: {@code 1 − β1^t} and {@code 1 − β2^t}.
     *
     * @param first  {@code 1 − β1^t}
     * @param second {@code 1 − β2^t}
     */
    record BiasCorrections(double first, double second) {
        static BiasCorrections of(AdamWConfig config, long t) {
            return new BiasCorrections(1 - power(config.beta1(), t), 1 - power(config.beta2(), t));
        }
    }

    /**
     * Updates {@code p} and its moments in place (under the caller's no-grad mode).
     *
     * @param p           the parameter
     * @param grad        its gradient
     * @param expAvg      its first moment {@code m}
     * @param expAvgSq    its second moment {@code v}
     * @param config      the hyperparameters
     * @param weightDecay the decay of the parameter's group (0 for the undecayed one)
     * @param corrections the bias corrections of the parameter's update count
     * @param denominator a tensor of {@code p}'s shape and dtype, overwritten
     */
    static void apply(Tensor p, Tensor grad, Tensor expAvg, Tensor expAvgSq, AdamWConfig config, double weightDecay,
                      BiasCorrections corrections, Tensor denominator) {
        double beta1 = config.beta1();
        double beta2 = config.beta2();
        if (weightDecay != 0) {
            p.mul_(new Scalar(1 - config.lr() * weightDecay));
        }
        expAvg.mul_(new Scalar(beta1)).add_(grad, new Scalar(1 - beta1));
        expAvgSq.mul_(new Scalar(beta2)).addcmul_(grad, grad, new Scalar(1 - beta2));
        torch.sqrt_out(denominator, expAvgSq);
        denominator.div_(new Scalar(Math.sqrt(corrections.second()))).add_(new Scalar(config.eps()));
        p.addcdiv_(expAvg, denominator, new Scalar(-(config.lr() / corrections.first())));
    }

    /**
     * {@code base^exponent} as the C library's {@code pow} gives it: libtorch's CPU kernel takes a one-element
     * tensor's power with {@code std::pow}.
     */
    static double power(double base, long exponent) {
        try (PointerScope scope = new PointerScope()) {
            TensorOptions float64 = new TensorOptions(torch.ScalarType.Double);
            return torch.scalar_tensor(new Scalar(base), float64)
                    .pow(torch.scalar_tensor(new Scalar((double) exponent), float64)).item_double();
        }
    }
}
