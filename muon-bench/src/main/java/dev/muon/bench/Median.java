package dev.muon.bench;

import java.util.Arrays;

/**
 * The median of some times, the two middle ones averaged when their count is even: the one definition every report
 * in this module takes the middle of its measurements by, so that their "median" columns mean the same thing.
 */
final class Median {
    private Median() {
    }

    /**
     * The median of values in any order; the values are not changed.
     *
     * @param values at least one
     * @return their median
     */
    static double of(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return ofSorted(sorted);
    }

    /**
     * The median of values already sorted in ascending order, for a caller that keeps the sorted copy for its ends.
     *
     * @param sorted at least one value, ascending
     * @return their median
     */
    static double ofSorted(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
