package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;

/** The error measures of muon-core's golden README, on DJL arrays read back as doubles. */
final class Measures {
    private Measures() {
    }

    /** The array's values as doubles, row-major. */
    static double[] values(NDArray a) {
        return a.toType(DataType.FLOAT64, false).toDoubleArray();
    }

    /** ‖got − expected‖_F / ‖expected‖_F (or the absolute norm when expected is zero). */
    static double relativeError(double[] got, double[] expected) {
        check(got, expected);
        double diff = 0;
        double ref = 0;
        for (int i = 0; i < got.length; i++) {
            diff += (got[i] - expected[i]) * (got[i] - expected[i]);
            ref += expected[i] * expected[i];
        }
        return ref == 0 ? Math.sqrt(diff) : Math.sqrt(diff / ref);
    }

    /** max |got − expected|. */
    static double maxAbsError(double[] got, double[] expected) {
        check(got, expected);
        double max = 0;
        for (int i = 0; i < got.length; i++) {
            max = Math.max(max, Math.abs(got[i] - expected[i]));
        }
        return max;
    }

    /** {@code a − b}. */
    static double[] minus(double[] a, double[] b) {
        double[] d = new double[a.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = a[i] - b[i];
        }
        return d;
    }

    private static void check(double[] got, double[] expected) {
        if (got.length != expected.length) {
            throw new AssertionError("length " + got.length + ", expected " + expected.length);
        }
        for (double g : got) {
            if (!Double.isFinite(g)) {
                throw new AssertionError("non-finite value " + g);
            }
        }
    }
}
