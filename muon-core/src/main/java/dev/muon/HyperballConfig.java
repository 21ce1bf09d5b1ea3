package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * The settings of Hyperball (MuonH; Wen, Dang, Lyu, Ma and Liang, 2025, arXiv 2606.16899): each Muon parameter
 * and its update are held at a fixed Frobenius norm, in place of weight decay. Turned on for a Muon group by
 * {@link MuonConfig#withHyperball}; off by default. Per parameter and step, on top of Muon's momentum and
 * orthogonalization (and NorMuon's normalization, when on):
 * <pre>
 *   R  = radius, or, when radius is 0, ‖p‖_F of the whole parameter before this step
 *   p' = p − lr · R · O / max(‖O‖_F, eps)
 *   p  = R · p' / max(‖p'‖_F, eps)
 * </pre>
 * The lr is used as given: the lr adjustment ({@link MuonConfig#adjustLr()}, {@link MuonConfig#extraScale()}) has
 * no effect, since {@code O} is normalized. Weight decay must be 0 (the sphere replaces it), and so cautious
 * weight decay is off. A parameter of zero norm is refused when the optimizer is built; with a fixed radius, every
 * parameter is rescaled to {@code ‖p‖_F = radius} as the last thing a build does, as NVIDIA's Emerging-Optimizers
 * {@code MuonHyperball} does, and a log line says so.
 *
 * <table>
 *   <caption>Fields</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>radius</td><td>0: each parameter's own norm</td><td>finite, &gt;= 0</td></tr>
 *   <tr><td>eps</td><td>1e-8</td><td>finite, &gt; 0</td></tr>
 * </table>
 *
 * <pre>{@code
 * MuonConfig config = MuonConfig.defaults().withWeightDecay(0).withHyperball(HyperballConfig.defaults());
 * }</pre>
 *
 * @param radius the fixed Frobenius norm of every parameter, or 0 for each parameter's norm before the step
 * @param eps    the floor of both norms
 */
public record HyperballConfig(double radius, double eps) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates both fields.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public HyperballConfig {
        if (!Double.isFinite(radius) || !(radius >= 0)) {
            throw new IllegalArgumentException("hyperball radius must be a finite number >= 0 (0: each "
                    + "parameter's own norm), got " + radius);
        }
        if (!Double.isFinite(eps) || !(eps > 0)) {
            throw new IllegalArgumentException("hyperball eps must be a finite number > 0, got " + eps);
        }
    }

    /**
     * The defaults: each parameter keeps its own norm, {@code eps = 1e-8} (Emerging-Optimizers' defaults).
     *
     * @return the default settings
     */
    public static HyperballConfig defaults() {
        return new HyperballConfig(0, 1e-8);
    }

    /**
     * Every parameter on the sphere of a fixed radius.
     *
     * @param radius the Frobenius norm, finite and &gt; 0
     * @return the settings
     * @throws IllegalArgumentException if the radius is not finite and &gt; 0
     */
    public static HyperballConfig radius(double radius) {
        if (!(radius > 0)) {
            throw new IllegalArgumentException("hyperball radius must be a finite number > 0 for a fixed sphere, "
                    + "got " + radius);
        }
        return new HyperballConfig(radius, defaults().eps());
    }

    /**
     * Whether every parameter is held at one fixed radius (else at its own norm).
     *
     * @return true when {@link #radius()} is not 0
     */
    public boolean fixedRadius() {
        return radius != 0;
    }
}
