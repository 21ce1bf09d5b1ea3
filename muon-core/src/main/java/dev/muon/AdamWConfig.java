package dev.muon;

import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.AdamWOptions;

import java.util.Objects;

/**
 * The hyperparameters of the AdamW group of a {@link MuonAdamW}: an immutable value, validated at construction.
 * Fields and defaults are libtorch's {@code AdamWOptions} (and PyTorch's {@code torch.optim.AdamW}); AMSGrad is
 * not offered.
 *
 * <p>The update, with step count {@code t = 1, 2, …}:
 * <pre>
 *   p = p·(1 − lr·weightDecay)
 *   m = β1·m + (1 − β1)·g ;  v = β2·v + (1 − β2)·g²
 *   p = p − lr/(1 − β1ᵗ) · m / (sqrt(v)/sqrt(1 − β2ᵗ) + eps)
 * </pre>
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>lr</td><td>1e-3</td><td>finite, &gt;= 0</td></tr>
 *   <tr><td>beta1</td><td>0.9</td><td>in [0, 1)</td></tr>
 *   <tr><td>beta2</td><td>0.999</td><td>in [0, 1)</td></tr>
 *   <tr><td>eps</td><td>1e-8</td><td>finite, &gt;= 0</td></tr>
 *   <tr><td>weightDecay</td><td>1e-2</td><td>finite, &gt;= 0</td></tr>
 * </table>
 *
 * <pre>{@code
 * AdamWConfig adamW = AdamWConfig.defaults().withLr(3e-4).withBetas(0.9, 0.95).withWeightDecay(0.1);
 * }</pre>
 *
 * @param lr          the learning rate
 * @param beta1       the decay of the first moment
 * @param beta2       the decay of the second moment
 * @param eps         added to the bias-corrected {@code sqrt(v)}, outside the square root
 * @param weightDecay the decoupled weight decay: {@code p *= 1 − lr·weightDecay}
 */
public record AdamWConfig(double lr, double beta1, double beta2, double eps, double weightDecay) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public AdamWConfig {
        requireNonNegative("lr", lr);
        requireBeta("beta1", beta1);
        requireBeta("beta2", beta2);
        requireNonNegative("eps", eps);
        requireNonNegative("weightDecay", weightDecay);
    }

    /**
     * libtorch's defaults (see the table above).
     *
     * @return the default configuration
     */
    public static AdamWConfig defaults() {
        return new AdamWConfig(1e-3, 0.9, 0.999, 1e-8, 1e-2);
    }

    /**
     * A copy with another learning rate.
     *
     * @param value the lr
     * @return the copy
     * @throws IllegalArgumentException if the value is invalid
     */
    public AdamWConfig withLr(double value) {
        return new AdamWConfig(value, beta1, beta2, eps, weightDecay);
    }

    /**
     * A copy with other moment decays.
     *
     * @param b1 beta1
     * @param b2 beta2
     * @return the copy
     * @throws IllegalArgumentException if a value is invalid
     */
    public AdamWConfig withBetas(double b1, double b2) {
        return new AdamWConfig(lr, b1, b2, eps, weightDecay);
    }

    /**
     * A copy with another eps.
     *
     * @param value eps
     * @return the copy
     * @throws IllegalArgumentException if the value is invalid
     */
    public AdamWConfig withEps(double value) {
        return new AdamWConfig(lr, beta1, beta2, value, weightDecay);
    }

    /**
     * A copy with another weight decay.
     *
     * @param value the weight decay
     * @return the copy
     * @throws IllegalArgumentException if the value is invalid
     */
    public AdamWConfig withWeightDecay(double value) {
        return new AdamWConfig(lr, beta1, beta2, eps, value);
    }

    /** libtorch's options for this configuration (AMSGrad off). */
    AdamWOptions toOptions() {
        AdamWOptions options = new AdamWOptions(lr);
        options.betas().put(BetaLayout.FIRST, beta1).put(1 - BetaLayout.FIRST, beta2);
        options.eps().put(eps);
        options.weight_decay().put(weightDecay);
        options.amsgrad().put(false);
        return options;
    }

    /**
     * The config of libtorch options a user already has (AMSGrad must be off).
     *
     * @param options libtorch's AdamW options
     * @return the same hyperparameters as a config
     * @throws IllegalArgumentException if AMSGrad is on or a value breaks its rule
     */
    public static AdamWConfig of(AdamWOptions options) {
        Objects.requireNonNull(options, "options must not be null");
        if (options.amsgrad().get()) {
            throw new IllegalArgumentException("amsgrad must be false, got true: MuonAdamW does not offer AMSGrad");
        }
        return new AdamWConfig(options.get_lr(), options.betas().get(BetaLayout.FIRST),
                options.betas().get(1 - BetaLayout.FIRST), options.eps().get(), options.weight_decay().get());
    }

    /**
     * Where beta1 sits in the {@code std::tuple<double, double>} behind {@code AdamWOptions::betas()}: the bindings
     * expose the tuple as raw memory, and libstdc++ lays a tuple out last element first while libc++ and MSVC do
     * not. Read once from libtorch's defaults (0.9, 0.999) rather than assumed.
     */
    private static final class BetaLayout {
        static final int FIRST = new AdamWOptions().betas().get(0) == 0.9 ? 0 : 1;
    }

    private static void requireNonNegative(String field, double value) {
        if (!Double.isFinite(value)) {
            throw new IllegalArgumentException(field + " must be finite, got " + value);
        }
        if (!(value >= 0)) {
            throw new IllegalArgumentException(field + " must be >= 0, got " + value);
        }
    }

    private static void requireBeta(String field, double value) {
        if (!(value >= 0 && value < 1)) {
            throw new IllegalArgumentException(field + " must be in [0, 1), got " + value);
        }
    }
}
