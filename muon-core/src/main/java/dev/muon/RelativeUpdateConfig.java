package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * The settings of RelativeUpdate, a weight-update hook (NVIDIA-NeMo Emerging-Optimizers,
 * {@code weight_update_hooks/relative_update.py}): the update is rescaled to the parameter's norm before the step,
 * so the lr is the step's size relative to the weight. An immutable value, validated at construction; turned on for
 * a Muon group by {@link MuonConfig#withRelativeUpdate(RelativeUpdateConfig)}, off by default.
 * <pre>
 *   O ← (‖p‖_F / ‖O‖_F) · O        ‖p‖ before the update; 0 when either norm is below eps
 *   p = (1 − lr·weightDecay)·p − lr·O
 * </pre>
 * The lr adjustment does not apply ({@link MuonConfig#scaledLr} is {@code lr}): the rescaling erases any factor on
 * {@code O}, as Emerging-Optimizers' hook erases its scale mode. The norms are taken in float32 (float64 for a
 * float64 parameter) on the parameter's device.
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>eps</td><td>1e-15</td><td>finite, &gt; 0</td></tr>
 * </table>
 *
 * <pre>{@code
 * MuonConfig config = MuonConfig.defaults().withLr(0.01).withRelativeUpdate(RelativeUpdateConfig.defaults());
 * }</pre>
 *
 * @param eps below it a norm counts as zero, and the update is zero
 */
public record RelativeUpdateConfig(double eps) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public RelativeUpdateConfig {
        if (!Double.isFinite(eps) || !(eps > 0)) {
            throw new IllegalArgumentException("relativeUpdate eps must be a finite number > 0, got " + eps);
        }
    }

    /**
     * The default of Emerging-Optimizers' {@code RelativeUpdate}: eps 1e-15.
     *
     * @return the default settings
     */
    public static RelativeUpdateConfig defaults() {
        return new RelativeUpdateConfig(1e-15);
    }
}
