package dev.muon.bench;

import java.util.Arrays;
import java.util.Locale;

/**
 * The spread of a run's step times, not only its middle: the median, the 90th and 99th percentiles (nearest rank: the
 * smallest time at or below which that share of the steps fall) and the slowest step. A training loop feels a slow
 * step as a stall, and a ratio of medians hides it; these four numbers show it.
 *
 * @param median the median, ms
 * @param p90    the 90th percentile, ms
 * @param p99    the 99th percentile, ms
 * @param max    the slowest step, ms
 */
public record StepSpread(double median, double p90, double p99, double max) {
    /**
     * The spread of some step times.
     *
     * @param ms the times, ms, at least one
     * @return their spread
     * @throws IllegalArgumentException if there is no time or one is not finite
     */
    public static StepSpread of(double[] ms) {
        if (ms.length == 0) {
            throw new IllegalArgumentException("step times must hold at least one time, got none");
        }
        double[] sorted = ms.clone();
        Arrays.sort(sorted);
        for (double t : sorted) {
            if (!Double.isFinite(t)) {
                throw new IllegalArgumentException("step times must be finite, got " + t);
            }
        }
        return new StepSpread(Median.ofSorted(sorted), nearestRank(sorted, 90), nearestRank(sorted, 99),
                sorted[sorted.length - 1]);
    }

    /** The {@code p}-th percentile by nearest rank: the value at rank ⌈p·n/100⌉ of the sorted times. */
    private static double nearestRank(double[] sorted, int p) {
        int rank = (int) Math.ceil(p * sorted.length / 100.0);
        return sorted[Math.max(rank, 1) - 1];
    }

    /**
     * As a report line shows it.
     *
     * @return {@code median 812.3, p90 840.1, p99 1049.0, max 1049.0 ms}
     */
    @Override
    public String toString() {
        return String.format(Locale.ROOT, "median %.1f, p90 %.1f, p99 %.1f, max %.1f ms", median, p90, p99, max);
    }
}
