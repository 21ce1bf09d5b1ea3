package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;
import java.util.Objects;

/**
 * The settings of one Newton–Schulz orthogonalization, validated at construction. Field names are PyTorch's
 * ({@code ns_coefficients}, {@code ns_steps}, {@code eps}).
 *
 * <table>
 *   <caption>Defaults ({@link #defaults()})</caption>
 *   <tr><th>field</th><th>default</th><th>rule</th></tr>
 *   <tr><td>nsCoefficients</td><td>{@link CoefficientSchedule#kellerJordan()}</td>
 *       <td>a per-step schedule's length equals nsSteps</td></tr>
 *   <tr><td>nsSteps</td><td>5</td><td>1 to 99</td></tr>
 *   <tr><td>eps</td><td>1e-7</td><td>finite, &gt; 0</td></tr>
 *   <tr><td>nsPrecision</td><td>{@link NsPrecision#FLOAT32}</td><td>non-null</td></tr>
 *   <tr><td>nsAlgorithm</td><td>{@link NsAlgorithm#AUTO}</td><td>non-null</td></tr>
 *   <tr><td>nsPreconditioning</td><td>{@link NsPreconditioning#FROBENIUS}</td><td>non-null</td></tr>
 * </table>
 *
 * @param nsCoefficients the polynomial schedule
 * @param nsSteps        the number of iterations
 * @param eps            the floor of the input's norm: {@code X / max(s·‖X‖_F, eps)}; with AOL, of its row sums
 * @param nsPrecision    the dtype of the iteration
 * @param nsAlgorithm    which kernel runs the iteration (all compute the same function)
 * @param nsPreconditioning how the input is brought under spectral norm 1: PyTorch's Frobenius normalization, or
 *                       AOL rescaling in the first iteration
 */
public record NewtonSchulzConfig(CoefficientSchedule nsCoefficients, int nsSteps, double eps,
                                 NsPrecision nsPrecision, NsAlgorithm nsAlgorithm,
                                 NsPreconditioning nsPreconditioning) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The largest accepted {@code nsSteps}; more is never useful and usually a typo. */
    public static final int MAX_STEPS = 99;

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public NewtonSchulzConfig {
        Objects.requireNonNull(nsCoefficients, "nsCoefficients must not be null");
        Objects.requireNonNull(nsPrecision, "nsPrecision must not be null");
        Objects.requireNonNull(nsAlgorithm, "nsAlgorithm must not be null");
        Objects.requireNonNull(nsPreconditioning, "nsPreconditioning must not be null");
        if (nsSteps < 1 || nsSteps > MAX_STEPS) {
            throw new IllegalArgumentException("nsSteps must be in [1, " + MAX_STEPS + "], got " + nsSteps);
        }
        if (nsCoefficients.fixedLength().isPresent() && nsCoefficients.fixedLength().getAsInt() != nsSteps) {
            throw new IllegalArgumentException("nsCoefficients schedule '" + nsCoefficients.name() + "' has "
                    + nsCoefficients.fixedLength().getAsInt() + " steps but nsSteps is " + nsSteps
                    + "; they must agree");
        }
        if (!Double.isFinite(eps)) {
            throw new IllegalArgumentException("eps must be finite, got " + eps);
        }
        if (!(eps > 0)) {
            throw new IllegalArgumentException("eps must be > 0, got " + eps);
        }
    }

    /**
     * Settings with the {@link NsAlgorithm#AUTO} kernel choice.
     *
     * @param nsCoefficients the polynomial schedule
     * @param nsSteps        the number of iterations
     * @param eps            the floor of the input's norm
     * @param nsPrecision    the dtype of the iteration
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public NewtonSchulzConfig(CoefficientSchedule nsCoefficients, int nsSteps, double eps, NsPrecision nsPrecision) {
        this(nsCoefficients, nsSteps, eps, nsPrecision, NsAlgorithm.AUTO, NsPreconditioning.FROBENIUS);
    }

    /**
     * Settings with PyTorch's Frobenius normalization.
     *
     * @param nsCoefficients the polynomial schedule
     * @param nsSteps        the number of iterations
     * @param eps            the floor of the input's norm
     * @param nsPrecision    the dtype of the iteration
     * @param nsAlgorithm    which kernel runs the iteration
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    public NewtonSchulzConfig(CoefficientSchedule nsCoefficients, int nsSteps, double eps, NsPrecision nsPrecision,
                              NsAlgorithm nsAlgorithm) {
        this(nsCoefficients, nsSteps, eps, nsPrecision, nsAlgorithm, NsPreconditioning.FROBENIUS);
    }

    /**
     * PyTorch's defaults: Keller Jordan's triple, 5 steps, eps 1e-7, float32 (and the AUTO kernel choice).
     *
     * @return the default settings
     */
    public static NewtonSchulzConfig defaults() {
        return new NewtonSchulzConfig(CoefficientSchedule.kellerJordan(), 5, 1e-7, NsPrecision.FLOAT32);
    }

    /**
     * A copy with another schedule; a per-step schedule also sets {@code nsSteps} to its length.
     *
     * @param schedule the schedule
     * @return the copy
     */
    public NewtonSchulzConfig withNsCoefficients(CoefficientSchedule schedule) {
        Objects.requireNonNull(schedule, "nsCoefficients must not be null");
        return new NewtonSchulzConfig(schedule, schedule.fixedLength().orElse(nsSteps), eps, nsPrecision,
                nsAlgorithm, nsPreconditioning);
    }

    /**
     * A copy with another step count.
     *
     * @param steps the step count
     * @return the copy
     */
    public NewtonSchulzConfig withNsSteps(int steps) {
        return new NewtonSchulzConfig(nsCoefficients, steps, eps, nsPrecision, nsAlgorithm, nsPreconditioning);
    }

    /**
     * A copy with another norm floor.
     *
     * @param value the floor
     * @return the copy
     */
    public NewtonSchulzConfig withEps(double value) {
        return new NewtonSchulzConfig(nsCoefficients, nsSteps, value, nsPrecision, nsAlgorithm, nsPreconditioning);
    }

    /**
     * A copy with another working precision.
     *
     * @param precision the precision
     * @return the copy
     */
    public NewtonSchulzConfig withNsPrecision(NsPrecision precision) {
        return new NewtonSchulzConfig(nsCoefficients, nsSteps, eps, precision, nsAlgorithm, nsPreconditioning);
    }

    /**
     * A copy with another kernel choice.
     *
     * @param algorithm the kernel choice
     * @return the copy
     */
    public NewtonSchulzConfig withNsAlgorithm(NsAlgorithm algorithm) {
        return new NewtonSchulzConfig(nsCoefficients, nsSteps, eps, nsPrecision, algorithm, nsPreconditioning);
    }

    /**
     * A copy with another preconditioning.
     *
     * @param value the preconditioning
     * @return the copy
     */
    public NewtonSchulzConfig withNsPreconditioning(NsPreconditioning value) {
        Objects.requireNonNull(value, "nsPreconditioning must not be null");
        return new NewtonSchulzConfig(nsCoefficients, nsSteps, eps, nsPrecision, nsAlgorithm, value);
    }
}
