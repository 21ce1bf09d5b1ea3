package dev.muon.examples.study;

import dev.muon.examples.SampleStats;

/**
 * The statistics of {@link MuonStudy}'s protocol, on {@link SampleStats}'s means and sample standard deviations:
 * Student's t distribution (its CDF through the regularized incomplete beta function, its quantiles by bisection),
 * the 95 % t-interval of a mean, Welch's unequal-variance t-test with its two-sided p-value, and the paired t-test
 * of two samples matched one to one (by seed).
 *
 * <p>The incomplete beta function is the continued fraction of Numerical Recipes (Press et al., 3rd ed., §6.4,
 * {@code betacf} with Lentz's method) and the log-gamma function Lanczos' approximation (g = 7, 9 terms), both
 * good to about 1e-14 here, far below what a 95 % interval needs.
 */
final class StudyStats {
    /** The level of every interval and test of the protocol. */
    static final double ALPHA = 0.05;
    private static final double[] LANCZOS = {0.99999999999980993, 676.5203681218851, -1259.1392167224028,
        771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012,
        9.9843695780195716e-6, 1.5056327351493116e-7};

    private StudyStats() {
    }

    /** A mean and its two-sided 95 % t-interval over {@code n} values; the half-width is NaN for n < 2. */
    record Interval(int n, double mean, double sd, double halfWidth) {
        double low() {
            return mean - halfWidth;
        }

        double high() {
            return mean + halfWidth;
        }
    }

    /** Welch's test of two means: the statistic (first less second), its degrees of freedom, the p-value. */
    record Welch(double t, double df, double p) {
    }

    /**
     * The paired t-test of two samples matched one to one: the differences (first less second) with their mean and
     * 95 % t-interval, Student's t on them with {@code n − 1} degrees of freedom, its two-sided p-value, and on how
     * many pairs the first value is the lower.
     */
    record Paired(Interval difference, double t, double p, int lower) {
    }

    /** What the protocol's rule says of a candidate against the baseline. */
    enum Verdict {
        /** Significantly fewer steps (or seconds) to the target. */
        FASTER("faster"),
        /** Significantly more. */
        SLOWER("slower"),
        /** p ≥ 0.05, or too few runs to test. */
        NO_DIFFERENCE("no difference shown");

        private final String text;

        Verdict(String text) {
            this.text = text;
        }

        @Override
        public String toString() {
            return text;
        }
    }

    /** Whether every value is finite: a sample with a diverged run's NaN is not tested. */
    static boolean allFinite(double[] values) {
        return java.util.Arrays.stream(values).allMatch(Double::isFinite);
    }

    /**
     * The mean with its 95 % t-interval: {@code mean ± t(0.975, n − 1) · sd / √n}.
     *
     * @param values the values, at least one
     * @return the interval
     */
    static Interval interval(double[] values) {
        int n = values.length;
        double sd = SampleStats.sd(values);
        double half = n < 2 ? Double.NaN : tQuantile(1 - ALPHA / 2, n - 1) * sd / Math.sqrt(n);
        return new Interval(n, SampleStats.mean(values), sd, half);
    }

    /**
     * Welch's t-test: {@code t = (m₁ − m₂) / √(s₁²/n₁ + s₂²/n₂)}, with the Welch–Satterthwaite degrees of freedom,
     * and the two-sided p-value {@code 2·P(T > |t|)}.
     *
     * @param first  the first sample, at least two values
     * @param second the second sample, at least two values
     * @return the test; p is 1 when both samples are constant and equal, 0 when constant and different
     * @throws IllegalArgumentException if a sample has fewer than two values
     */
    static Welch welch(double[] first, double[] second) {
        if (first.length < 2 || second.length < 2) {
            throw new IllegalArgumentException("Welch's test needs at least 2 values in each sample, got "
                    + first.length + " and " + second.length);
        }
        double a = Math.pow(SampleStats.sd(first), 2) / first.length;
        double b = Math.pow(SampleStats.sd(second), 2) / second.length;
        double diff = SampleStats.mean(first) - SampleStats.mean(second);
        if (a + b == 0) {
            return new Welch(diff == 0 ? 0 : Math.copySign(Double.POSITIVE_INFINITY, diff), Double.NaN,
                    diff == 0 ? 1 : 0);
        }
        double t = diff / Math.sqrt(a + b);
        double df = (a + b) * (a + b) / (a * a / (first.length - 1) + b * b / (second.length - 1));
        return new Welch(t, df, 2 * tCdf(-Math.abs(t), df));
    }

    /**
     * The paired t-test: {@code t = mean(d) / (sd(d) / √n)} over the differences {@code d = first − second}, with
     * {@code n − 1} degrees of freedom, and the two-sided p-value {@code 2·P(T > |t|)}.
     *
     * @param first  the first sample
     * @param second the second sample, matched to the first by index
     * @return the test; p is 1 when every difference is 0, and 0 when the differences are equal and not 0
     * @throws IllegalArgumentException if the samples differ in length or have fewer than two pairs
     */
    static Paired paired(double[] first, double[] second) {
        if (first.length != second.length || first.length < 2) {
            throw new IllegalArgumentException("the paired test needs two samples of one length, at least 2, got "
                    + first.length + " and " + second.length);
        }
        double[] d = new double[first.length];
        int lower = 0;
        for (int i = 0; i < d.length; i++) {
            d[i] = first[i] - second[i];
            lower += first[i] < second[i] ? 1 : 0;
        }
        Interval difference = interval(d);
        if (difference.sd() == 0) {
            double m = difference.mean();
            return new Paired(difference, m == 0 ? 0 : Math.copySign(Double.POSITIVE_INFINITY, m), m == 0 ? 1 : 0,
                    lower);
        }
        double t = difference.mean() / (difference.sd() / Math.sqrt(d.length));
        return new Paired(difference, t, 2 * tCdf(-Math.abs(t), d.length - 1), lower);
    }

    /**
     * The protocol's rule on steps (or seconds) to the target: a candidate is faster when Welch's two-sided p is
     * below {@value #ALPHA} and its mean is lower than the baseline's, slower when p is below it and its mean higher,
     * and otherwise no difference is shown.
     *
     * @param candidate the candidate's values
     * @param baseline  the baseline's values
     * @return the verdict; no difference when either has fewer than two values
     */
    static Verdict verdict(double[] candidate, double[] baseline) {
        if (candidate.length < 2 || baseline.length < 2) {
            return Verdict.NO_DIFFERENCE;
        }
        Welch w = welch(candidate, baseline);
        if (!(w.p() < ALPHA)) {
            return Verdict.NO_DIFFERENCE;
        }
        return w.t() < 0 ? Verdict.FASTER : Verdict.SLOWER;
    }

    /**
     * Student's t CDF: {@code P(T ≤ t)} with {@code df} degrees of freedom (any real df &gt; 0), from
     * {@code I_x(df/2, 1/2)} with {@code x = df / (df + t²)}.
     *
     * @param t  the value
     * @param df the degrees of freedom
     * @return the probability
     */
    static double tCdf(double t, double df) {
        if (Double.isInfinite(t)) {
            return t > 0 ? 1 : 0;
        }
        double tail = 0.5 * regularizedBeta(df / (df + t * t), df / 2, 0.5);
        return t > 0 ? 1 - tail : tail;
    }

    /**
     * Student's t quantile: the t with {@code P(T ≤ t) = p}, by bisection on {@link #tCdf} to 1e-12.
     *
     * @param p  the probability, in (0, 1)
     * @param df the degrees of freedom, &gt; 0
     * @return the quantile
     * @throws IllegalArgumentException if p is not in (0, 1) or df is not &gt; 0
     */
    static double tQuantile(double p, double df) {
        if (!(p > 0 && p < 1) || !(df > 0)) {
            throw new IllegalArgumentException("tQuantile needs p in (0, 1) and df > 0, got p " + p + ", df " + df);
        }
        if (p < 0.5) {
            return -tQuantile(1 - p, df);
        }
        double low = 0;
        double high = 1;
        while (tCdf(high, df) < p) {
            high *= 2;
        }
        while (high - low > 1e-12 * Math.max(1, high)) {
            double mid = (low + high) / 2;
            if (tCdf(mid, df) < p) {
                low = mid;
            } else {
                high = mid;
            }
        }
        return (low + high) / 2;
    }

    /** The regularized incomplete beta function I_x(a, b). */
    static double regularizedBeta(double x, double a, double b) {
        if (x <= 0) {
            return 0;
        }
        if (x >= 1) {
            return 1;
        }
        double front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x)
                + b * Math.log1p(-x));
        // The continued fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
        if (x < (a + 1) / (a + b + 2)) {
            return front * betaFraction(x, a, b) / a;
        }
        return 1 - front * betaFraction(1 - x, b, a) / b;
    }

    /** The continued fraction of the incomplete beta function, by the modified Lentz method. */
    private static double betaFraction(double x, double a, double b) {
        double tiny = 1e-300;
        double qab = a + b;
        double qap = a + 1;
        double qam = a - 1;
        double c = 1;
        double d = 1 - qab * x / qap;
        d = Math.abs(d) < tiny ? tiny : d;
        d = 1 / d;
        double h = d;
        for (int m = 1; m <= 10_000; m++) {
            int m2 = 2 * m;
            double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
            d = 1 + aa * d;
            d = Math.abs(d) < tiny ? tiny : d;
            c = 1 + aa / c;
            c = Math.abs(c) < tiny ? tiny : c;
            d = 1 / d;
            h *= d * c;
            aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
            d = 1 + aa * d;
            d = Math.abs(d) < tiny ? tiny : d;
            c = 1 + aa / c;
            c = Math.abs(c) < tiny ? tiny : c;
            d = 1 / d;
            double delta = d * c;
            h *= delta;
            if (Math.abs(delta - 1) < 1e-15) {
                break;
            }
        }
        return h;
    }

    /** ln Γ(x) for x &gt; 0, Lanczos' approximation. */
    static double logGamma(double x) {
        if (x < 0.5) {
            // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
            return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
        }
        double z = x - 1;
        double sum = LANCZOS[0];
        double t = z + 7.5;
        for (int i = 1; i < LANCZOS.length; i++) {
            sum += LANCZOS[i] / (z + i);
        }
        return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
    }
}
