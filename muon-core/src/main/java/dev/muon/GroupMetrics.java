package dev.muon;

import dev.muon.internal.TorchNatives;
import java.util.Map;

/**
 * Measurements of one optimizer group in one step, taken only when metrics are on
 * ({@link MuonAdamW.Builder#metrics(boolean)}). Norms are Frobenius norms over every parameter of the group that
 * had a gradient, computed in float64.
 *
 * @param optimizer    which group
 * @param gradNorm     the norm of the gradients the step used
 * @param momentumNorm after the step: the norm of Muon's momentum buffers, or of AdamW's first moments
 * @param updateRms    the root mean square of the parameter change, weight decay included
 * @param adjustedLr   the lr each parameter's update used: Muon's lr times its shape ratio and extra scale, or
 *                     AdamW's lr (before bias correction)
 */
public record GroupMetrics(OptimizerKind optimizer, double gradNorm, double momentumNorm, double updateRms,
                           Map<String, Double> adjustedLr) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Copies the map.
     *
     * @throws NullPointerException if a reference is null
     */
    public GroupMetrics {
        adjustedLr = Map.copyOf(adjustedLr);
    }
}
