package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * The settings of RadialBrake, a weight-update hook (NVIDIA-NeMo Emerging-Optimizers,
 * {@code weight_update_hooks/radial_brake.py}): after the whole update of a parameter (decay and step), its norm's
 * change is damped, outward more than inward by default. An immutable value, validated at construction; turned on
 * for a Muon group by {@link MuonConfig#withRadialBrake(RadialBrakeConfig)}, off by default.
 * <pre>
 *   n₀ = ‖p‖_F before the update,  n₁ = ‖p‖_F after it
 *   s  = outwardScale if n₁ &gt; n₀, else inwardScale
 *   p  = p · (n₀ + s·(n₁ − n₀)) / max(n₁, eps)
 * </pre>
 * The norms are taken in float32 (float64 for a float64 parameter) on the parameter's device; the choice of
 * {@code s} is made there too, so a GPU step does not wait for it. With {@code outwardScale = inwardScale = 1} it
 * changes nothing but rounding.
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>outwardScale</td><td>0.5</td><td>in [0, 1]</td></tr>
 *   <tr><td>inwardScale</td><td>1.0</td><td>in [0, 1]</td></tr>
 *   <tr><td>eps</td><td>1e-12</td><td>finite, &gt; 0</td></tr>
 * </table>
 *
 * <pre>{@code
 * MuonConfig config = MuonConfig.defaults().withRadialBrake(RadialBrakeConfig.defaults());
 * }</pre>
 *
 * @param outwardScale the share of a norm increase that is kept
 * @param inwardScale  the share of a norm decrease that is kept
 * @param eps          the floor of the norm after the update, in the division
 */
public record RadialBrakeConfig(double outwardScale, double inwardScale, double eps) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public RadialBrakeConfig {
        if (!(outwardScale >= 0 && outwardScale <= 1)) {
            throw new IllegalArgumentException("radialBrake outwardScale must be in [0, 1], got " + outwardScale);
        }
        if (!(inwardScale >= 0 && inwardScale <= 1)) {
            throw new IllegalArgumentException("radialBrake inwardScale must be in [0, 1], got " + inwardScale);
        }
        if (!Double.isFinite(eps) || !(eps > 0)) {
            throw new IllegalArgumentException("radialBrake eps must be a finite number > 0, got " + eps);
        }
    }

    /**
     * The defaults of Emerging-Optimizers' {@code RadialBrake}: half of a norm increase kept, all of a decrease,
     * eps 1e-12.
     *
     * @return the default settings
     */
    public static RadialBrakeConfig defaults() {
        return new RadialBrakeConfig(0.5, 1.0, 1e-12);
    }
}
