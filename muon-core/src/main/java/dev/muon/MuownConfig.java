package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * The settings of Muown (Lion et al., "Muown: Row-Norm Control for Muon Optimization", arXiv 2605.10797; NVIDIA's
 * Emerging-Optimizers {@code Muown}): each 2-D weight {@code W} is kept as a per-row magnitude {@code g} times a
 * direction {@code v / ‖v‖_row}; Muon moves the direction, Adam moves the magnitudes. Turned on for a Muon group by
 * {@link MuonConfig#withMuown}; off by default. Per parameter and step, {@code t += 1}, in float32 (float64 for a
 * float64 parameter), {@code g} and {@code v_norm} seeded with {@code W}'s row norms at the parameter's first step:
 * <pre>
 *   u = W / g;   v = u · v_norm
 *   grad_g = rowsum(grad ⊙ u);   grad_v = (g / v_norm) · (grad − u · grad_g)
 *   B = B.lerp(grad_v, 1 − momentum);   D = NS(B), scaled as Muon's (adjustLr, extraScale; NorMuon's when on)
 *   v' = v − lr · D
 *   m_g = m_g.lerp(grad_g, 1 − beta1);   v_g = v_g.lerp(grad_g², 1 − beta2)
 *   g  −= lr · (m_g / (1 − beta1^t)) / (sqrt(v_g / (1 − beta2^t)) + adamEps);   g −= lr · weightDecay · g
 *   W = g · v' / ‖v'‖_row;   v_norm = ‖v'‖_row
 * </pre>
 * The weight decay acts on the magnitudes {@code g}, not on {@code W}. Nesterov is refused (the reference has no
 * Nesterov blend): set {@code withNesterov(false)} first.
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>beta1</td><td>0.9</td><td>in [0, 1)</td></tr>
 *   <tr><td>beta2</td><td>0.95</td><td>in [0, 1)</td></tr>
 *   <tr><td>adamEps</td><td>1e-8</td><td>finite, &gt; 0</td></tr>
 * </table>
 *
 * <pre>{@code
 * MuonConfig config = MuonConfig.defaults().withNesterov(false).withMuown(MuownConfig.defaults());
 * }</pre>
 *
 * @param beta1   the decay of Adam's first moment of the magnitudes' gradient
 * @param beta2   the decay of Adam's second moment of the magnitudes' gradient
 * @param adamEps added to the root of Adam's second moment
 */
public record MuownConfig(double beta1, double beta2, double adamEps) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public MuownConfig {
        if (!(beta1 >= 0 && beta1 < 1)) {
            throw new IllegalArgumentException("muown beta1 must be in [0, 1), got " + beta1);
        }
        if (!(beta2 >= 0 && beta2 < 1)) {
            throw new IllegalArgumentException("muown beta2 must be in [0, 1), got " + beta2);
        }
        if (!Double.isFinite(adamEps) || !(adamEps > 0)) {
            throw new IllegalArgumentException("muown adamEps must be a finite number > 0, got " + adamEps);
        }
    }

    /**
     * The defaults of Emerging-Optimizers' {@code Muown}: {@code betas = (0.9, 0.95)}, {@code adam_eps = 1e-8}.
     *
     * @return the default settings
     */
    public static MuownConfig defaults() {
        return new MuownConfig(0.9, 0.95, 1e-8);
    }
}
