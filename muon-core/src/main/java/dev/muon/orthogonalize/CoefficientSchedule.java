package dev.muon.orthogonalize;

import dev.muon.internal.NullFreeList;
import dev.muon.internal.TorchNatives;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * Which {@link Coefficients} each Newton–Schulz step uses: one triple for every step, or one triple per step.
 *
 * <p>Named schedules (sources in {@code docs/algorithm.md}):
 * <table>
 *   <caption>Named schedules</caption>
 *   <tr><th>factory</th><th>steps</th><th>normalisation safety</th></tr>
 *   <tr><td>{@link #kellerJordan()}</td><td>any (constant triple 3.4445, −4.7750, 2.0315)</td><td>1</td></tr>
 *   <tr><td>{@link #youJiacheng()}</td><td>6, as published</td><td>1</td></tr>
 *   <tr><td>{@link #polarExpress5()}</td><td>5</td><td>1.01</td></tr>
 *   <tr><td>{@link #polarExpress8()}</td><td>8</td><td>1.01</td></tr>
 * </table>
 *
 * <p>{@code normalizationSafety} scales the Frobenius norm used to normalise the input
 * ({@code X / max(s·‖X‖_F, eps)}); Polar Express designs its polynomials for singular values in
 * {@code (0, 1]} and divides by {@code 1.01·‖X‖_F} so that rounding cannot push them above 1.
 *
 * @param name                a short label for logs and tables
 * @param coefficients        one triple (when {@code repeating}) or one triple per step
 * @param repeating           whether the single triple is used for every step
 * @param normalizationSafety the factor applied to the input norm, at least 1
 */
public record CoefficientSchedule(String name, List<Coefficients> coefficients, boolean repeating,
                                  double normalizationSafety) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    // Polar Express, degree 5 (Amsel, Persson, Musco, Gower 2025, arXiv:2505.16932, Algorithm 1): the raw
    // minimax compositions before the 1.01 safety damping, which the paper applies to all but the last entry.
    private static final double[][] POLAR_EXPRESS_RAW = {
            {8.28721201814563, -23.595886519098837, 17.300387312530933},
            {4.107059111542203, -2.9478499167379106, 0.5448431082926601},
            {3.9486908534822946, -2.908902115962949, 0.5518191394370137},
            {3.3184196573706015, -2.488488024314874, 0.51004894012372},
            {2.300652019954817, -1.6689039845747493, 0.4188073119525673},
            {1.891301407787398, -1.2679958271945868, 0.37680408948524835},
            {1.8750014808534479, -1.2500016453999487, 0.3750001645474248},
            {1.875, -1.25, 0.375},
    };
    private static final double POLAR_EXPRESS_SAFETY = 1.01;

    // You Jiacheng's optimised six-step schedule (modded-nanogpt, Feb 2025), numerators over 1024 as published.
    private static final int[][] YOU_JIACHENG_OVER_1024 = {
            {3955, -8306, 5008},
            {3735, -6681, 3463},
            {3799, -6499, 3211},
            {4019, -6385, 2906},
            {2677, -3029, 1162},
            {2172, -1833, 682},
    };

    /**
     * Validates the schedule.
     *
     * @throws IllegalArgumentException if the list is empty, a repeating schedule has more than one triple, or
     *                                  the safety factor is not a finite number {@code >= 1}
     */
    public CoefficientSchedule {
        Objects.requireNonNull(name, "name must not be null");
        Objects.requireNonNull(coefficients, "coefficients must not be null");
        coefficients = NullFreeList.copyOf(coefficients, "nsCoefficients");
        if (coefficients.isEmpty()) {
            throw new IllegalArgumentException("nsCoefficients must hold at least one triple, got none");
        }
        if (repeating && coefficients.size() != 1) {
            throw new IllegalArgumentException(
                    "a repeating nsCoefficients schedule must hold exactly one triple, got " + coefficients.size());
        }
        if (!(normalizationSafety >= 1.0) || !Double.isFinite(normalizationSafety)) {
            throw new IllegalArgumentException(
                    "normalizationSafety must be a finite number >= 1, got " + normalizationSafety);
        }
    }

    /**
     * The same triple at every step.
     *
     * @param coefficients the triple
     * @return a schedule that fits any number of steps
     */
    public static CoefficientSchedule constant(Coefficients coefficients) {
        Objects.requireNonNull(coefficients, "coefficients must not be null");
        return new CoefficientSchedule("constant" + tripleLabel(coefficients), List.of(coefficients), true, 1.0);
    }

    /**
     * One triple per step; {@code nsSteps} must equal the list's length.
     *
     * @param coefficients the triples, in step order
     * @return the schedule
     */
    public static CoefficientSchedule perStep(List<Coefficients> coefficients) {
        return new CoefficientSchedule("per-step", coefficients, false, 1.0);
    }

    /**
     * Keller Jordan's triple {@code (3.4445, −4.7750, 2.0315)} at every step: PyTorch's default.
     *
     * @return the default schedule
     */
    public static CoefficientSchedule kellerJordan() {
        return new CoefficientSchedule("keller-jordan", List.of(Coefficients.KELLER_JORDAN), true, 1.0);
    }

    /**
     * You Jiacheng's six per-step triples, as published (six steps; there is no published five-step form).
     *
     * @return the schedule, 6 steps
     */
    public static CoefficientSchedule youJiacheng() {
        List<Coefficients> steps = new ArrayList<>();
        for (int[] t : YOU_JIACHENG_OVER_1024) {
            steps.add(new Coefficients(t[0] / 1024.0, t[1] / 1024.0, t[2] / 1024.0));
        }
        return new CoefficientSchedule("you-jiacheng-6", steps, false, 1.0);
    }

    /**
     * Polar Express, degree 5, first five polynomials, each damped by the 1.01 safety factor.
     *
     * @return the schedule, 5 steps
     */
    public static CoefficientSchedule polarExpress5() {
        return polarExpress("polar-express-5", 5);
    }

    /**
     * Polar Express, degree 5, all eight polynomials; the first seven damped by 1.01, the last (its fixed point
     * {@code 1.875, −1.25, 0.375}) undamped, as in the paper.
     *
     * @return the schedule, 8 steps
     */
    public static CoefficientSchedule polarExpress8() {
        return polarExpress("polar-express-8", 8);
    }

    /**
     * Turbo-Muon's four per-step triples for AOL-preconditioned Newton–Schulz ({@link NsPreconditioning#AOL}):
     * the last four of the five-step schedule it starts from (Dion's), as Turbo-Muon's reference takes them
     * (modded-nanogpt record 2025-11-11; arXiv 2512.04632): the preconditioning brings the spectrum closer to 1
     * than the first polynomial would, so that one is dropped.
     *
     * @return the schedule, 4 steps
     */
    public static CoefficientSchedule turboMuon4() {
        return new CoefficientSchedule("turbo-muon-4", List.of(new Coefficients(3.9505, -6.3029, 2.6377),
                new Coefficients(3.7418, -5.5913, 2.3037), new Coefficients(2.8769, -3.1427, 1.2046),
                new Coefficients(2.8366, -3.0525, 1.2012)), false, 1.0);
    }

    private static CoefficientSchedule polarExpress(String name, int steps) {
        List<Coefficients> list = new ArrayList<>();
        for (int i = 0; i < steps; i++) {
            double[] t = POLAR_EXPRESS_RAW[i];
            Coefficients raw = new Coefficients(t[0], t[1], t[2]);
            boolean last = i == POLAR_EXPRESS_RAW.length - 1;
            list.add(last ? raw : raw.damped(POLAR_EXPRESS_SAFETY));
        }
        return new CoefficientSchedule(name, list, false, POLAR_EXPRESS_SAFETY);
    }

    /**
     * The triple for step {@code step}.
     *
     * @param step zero-based step index
     * @return the coefficients to use
     */
    public Coefficients at(int step) {
        return repeating ? coefficients.get(0) : coefficients.get(step);
    }

    /**
     * The number of steps this schedule is written for, or empty if it repeats one triple.
     *
     * @return the fixed length, if any
     */
    public OptionalInt fixedLength() {
        return repeating ? OptionalInt.empty() : OptionalInt.of(coefficients.size());
    }

    private static String tripleLabel(Coefficients c) {
        return "(" + c.a() + ", " + c.b() + ", " + c.c() + ")";
    }
}
