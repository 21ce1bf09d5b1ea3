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
 * {@code MuonHyperball} does, and a log line says so. This is Emerging-Optimizers v0.3.1's meaning (v0.4.0 requires
 * a radius and refuses parameters not already on it). Checked against each parameter's dtype when the optimizer is
 * built ({@link #checkParameter}), with its norms in float32 or float64 ({@link #float64Norms}).
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
     * Whether a parameter's norms are taken in float64: a float64 parameter's always, and another's where its radius
     * (the fixed one, or its own norm, which the sphere keeps) lies outside {@code [2^-40, 2^40]}. Inside that range a
     * float32 sum of squares of the parameter, or of the parameter after one step of any lr up to {@code 2^20}, can
     * neither overflow nor lose its sum to underflow; outside it, it could (a fixed radius of 2e19 overflows it and
     * would zero the parameter), so the norm is taken in float64 there, at the cost of a float64 copy of the
     * parameter per norm.
     *
     * @param dtype the parameter's dtype's name ({@code float32}, {@code float64}, {@code bfloat16}, {@code float16})
     * @param norm  the parameter's Frobenius norm before training
     * @return true for float64 norms, false for float32 ones
     */
    public boolean float64Norms(String dtype, double norm) {
        double r = fixedRadius() ? radius : norm;
        return dtype.equals("float64") || r < FLOAT32_NORMS_LOW || r > FLOAT32_NORMS_HIGH;
    }

    /**
     * The largest finite value of a floating-point dtype, by name: what each factor of the update is clamped to
     * where it meets a parameter of that dtype, and the bound of a fixed radius's rescale.
     *
     * @param dtype {@code float64}, {@code float32}, {@code bfloat16} or {@code float16}
     * @return its largest finite value
     * @throws IllegalArgumentException for another name
     */
    public static double largestFinite(String dtype) {
        return switch (dtype) {
            case "float64" -> Double.MAX_VALUE;
            case "float32" -> Float.MAX_VALUE;
            case "bfloat16" -> 0x1.FEp127;
            case "float16" -> 65504;
            default -> throw new IllegalArgumentException("dtype must be float64, float32, bfloat16 or float16, got "
                    + dtype);
        };
    }

    /** The range of radii whose norms are taken in float32 ({@link #float64Norms}). */
    private static final double FLOAT32_NORMS_LOW = 0x1p-40;
    private static final double FLOAT32_NORMS_HIGH = 0x1p40;

    /**
     * Checks these settings against one Muon parameter when the optimizer is built, before anything changes: where
     * its norms are float32 ({@link #float64Norms}) eps must be a normal float32 (a smaller one is 0 there, and a zero
     * update would turn the parameter NaN); a fixed radius must keep every value of the parameter finite in its
     * dtype once the build rescales it onto the sphere.
     *
     * @param label      how to name the parameter, e.g. {@code parameter 'fc.weight'}
     * @param dtype      its dtype's name, e.g. {@code float32}
     * @param norm       its Frobenius norm, &gt; 0
     * @param largestAbs its largest absolute value
     * @throws IllegalArgumentException naming the parameter, the setting, the rule and the value
     */
    public void checkParameter(String label, String dtype, double norm, double largestAbs) {
        double largestFinite = largestFinite(dtype);
        if (!float64Norms(dtype, norm) && !(eps >= Float.MIN_NORMAL && eps <= Float.MAX_VALUE)) {
            throw new IllegalArgumentException("hyperball eps must be a normal float32 number (" + Float.MIN_NORMAL
                    + " to " + Float.MAX_VALUE + ") where the norms are float32, as they are for " + label
                    + " of dtype " + dtype + ", got " + eps);
        }
        if (fixedRadius() && largestAbs / norm * radius > largestFinite) {
            throw new IllegalArgumentException("hyperball radius must keep every value of " + label + " finite in "
                    + "its dtype " + dtype + " (at most " + largestFinite + "; rescaled to this radius its largest "
                    + "value would be " + largestAbs / norm * radius + "), got " + radius);
        }
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
