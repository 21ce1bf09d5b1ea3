package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

/**
 * One Newton–Schulz polynomial {@code p(x) = a·x + b·x³ + c·x⁵}, applied as
 * {@code A = X Xᵀ; B = b·A + c·A²; X = a·X + B X}.
 *
 * @param a the linear coefficient
 * @param b the cubic coefficient
 * @param c the quintic coefficient
 */
public record Coefficients(double a, double b, double c) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** Keller Jordan's triple, the default of PyTorch's {@code torch.optim.Muon}. */
    public static final Coefficients KELLER_JORDAN = new Coefficients(3.4445, -4.7750, 2.0315);

    /**
     * Validates that every coefficient is finite.
     *
     * @throws IllegalArgumentException if a coefficient is NaN or infinite
     */
    public Coefficients {
        requireFinite("a", a);
        requireFinite("b", b);
        requireFinite("c", c);
    }

    /**
     * Evaluates the scalar polynomial, which is what the iteration does to each singular value.
     *
     * @param x a singular value
     * @return {@code a·x + b·x³ + c·x⁵}
     */
    public double apply(double x) {
        double x2 = x * x;
        return x * (a + x2 * (b + c * x2));
    }

    /**
     * Divides the coefficients by a safety factor {@code s} as Polar Express does: {@code (a/s, b/s³, c/s⁵)}.
     * This is the polynomial {@code p(x/s)}, which keeps singular values that rounding pushed slightly above
     * the design interval from being amplified.
     *
     * @param s the safety factor, at least 1
     * @return the damped coefficients
     */
    Coefficients damped(double s) {
        return new Coefficients(a / s, b / (s * s * s), c / (s * s * s * s * s));
    }

    private static void requireFinite(String field, double value) {
        if (!Double.isFinite(value)) {
            throw new IllegalArgumentException("Coefficients." + field + " must be finite, got " + value);
        }
    }
}
