package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import dev.muon.AdamWConfig;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * AdamW's update of one parameter on DJL arrays, with PyTorch's formula as libtorch's {@code AdamW} (which
 * muon-core's hybrid runs) evaluates it, step count {@code t = 1, 2, …} of this parameter on this device:
 * <pre>
 *   p = p·(1 − lr·weightDecay)
 *   m = β1·m + (1 − β1)·g ;  v = β2·v + (1 − β2)·g·g
 *   p = p − lr/(1 − β1ᵗ) · m / (sqrt(v)/sqrt(1 − β2ᵗ) + eps)
 * </pre>
 * This is not DJL's {@code Adam}: there {@code eps} is added to {@code sqrt(v̂)} scaled by
 * {@code sqrt(1 − β2ᵗ)} (PyTorch adds it to {@code sqrt(v̂)}), and its weight decay is an L2 term on the gradient,
 * not decoupled. The moments are in the parameter's dtype, created by {@link #moments} outside any
 * {@link NDScope}; {@link #apply} runs inside one.
 */
final class AdamWStep {
    private final Map<ParameterKey, NDList> moments = new HashMap<>();
    /** A checkpoint's moments by parameter id, which each device's copy starts from. */
    private final Map<String, NDList> loaded = new HashMap<>();

    /**
     * The first and second moments of a parameter on a device, created (zeros) at its first update.
     *
     * @param key    the parameter and device
     * @param weight the parameter's array on that device
     * @param home   the manager that owns the state on that device
     * @return {@code [m, v]}
     */
    NDList moments(ParameterKey key, NDArray weight, NDManager home) {
        return moments.computeIfAbsent(key, k -> {
            NDList from = loaded.get(k.parameterId());
            return new NDList(
                    MuonStep.owned(MuonStep.loadedOrZeros(from == null ? null : from.get(0), weight, weight::zerosLike),
                            home),
                    MuonStep.owned(MuonStep.loadedOrZeros(from == null ? null : from.get(1), weight, weight::zerosLike),
                            home));
        });
    }

    /**
     * Replaces the moments with a checkpoint's, by parameter id: each device's copy starts from them at its next
     * update; a parameter without moments in the checkpoint starts afresh. The previous moments are freed.
     *
     * @param byId {@code [exp_avg, exp_avg_sq]} by id
     */
    void restore(Map<String, NDList> byId) {
        moments.values().forEach(NDList::close);
        moments.clear();
        loaded.clear();
        loaded.putAll(byId);
    }

    /**
     * The moments of a parameter on a device.
     *
     * @param key the parameter and device
     * @return {@code [m, v]}, once the parameter has been updated
     */
    Optional<NDList> moments(ParameterKey key) {
        return Optional.ofNullable(moments.get(key));
    }

    /**
     * Updates one parameter in place; call inside an {@link NDScope}, which frees every temporary.
     *
     * @param weight  the parameter
     * @param grad    its gradient
     * @param moments its {@code [m, v]}
     * @param config  the hyperparameters
     * @param lr      the learning rate of this step (the config's, or a tracker's)
     * @param t       this parameter's update count on this device, 1 for its first
     */
    static void apply(NDArray weight, NDArray grad, NDList moments, AdamWConfig config, double lr, int t) {
        NDArray m = moments.get(0);
        NDArray v = moments.get(1);
        if (config.weightDecay() != 0) {
            weight.muli(1 - lr * config.weightDecay());
        }
        m.muli(config.beta1()).addi(grad.mul(1 - config.beta1()));
        // addcmul(g, g, 1 − β2) multiplies as (value·g)·g.
        v.muli(config.beta2()).addi(grad.mul(1 - config.beta2()).muli(grad));
        double biasCorrection1 = 1 - Math.pow(config.beta1(), t);
        double biasCorrection2 = 1 - Math.pow(config.beta2(), t);
        NDArray denominator = v.sqrt().divi(Math.sqrt(biasCorrection2)).addi(config.eps());
        weight.subi(m.div(denominator).muli(lr / biasCorrection1));
    }
}
