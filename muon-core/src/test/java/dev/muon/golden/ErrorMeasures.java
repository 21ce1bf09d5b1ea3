package dev.muon.golden;

import dev.muon.MuonConfig;

/**
 * The error measures of the golden README on plain doubles, and what the golden tests measure with them, for every
 * module's tests (muon-core's, muon-cuda's and, through the test jar, muon-djl's). Bindings-free: no tensor type.
 */
public final class ErrorMeasures {
    private ErrorMeasures() {
    }

    /** ‖got − expected‖_F / ‖expected‖_F (or the absolute norm when expected is zero). */
    public static double relativeError(double[] got, double[] expected) {
        checkLengths(got, expected);
        double diff = 0;
        double ref = 0;
        for (int i = 0; i < got.length; i++) {
            diff += (got[i] - expected[i]) * (got[i] - expected[i]);
            ref += expected[i] * expected[i];
        }
        return ref == 0 ? Math.sqrt(diff) : Math.sqrt(diff / ref);
    }

    /** {@code a − b}. */
    public static double[] minus(double[] a, double[] b) {
        double[] d = new double[a.length];
        for (int j = 0; j < d.length; j++) {
            d[j] = a[j] - b[j];
        }
        return d;
    }

    /**
     * The orthogonalized update recovered from a parameter's change, {@code O = (p_{k−1}·(1 − lr·wd) − p_k) /
     * (lr·ratio)}, in float64.
     */
    public static double[] recoveredUpdate(double[] before, double[] after, MuonConfig config, long[] shape) {
        double decay = 1 - config.lr() * config.weightDecay();
        double scaledLr = config.lr() * config.adjustLr().ratio(shape[0], shape[1]);
        double[] o = new double[before.length];
        for (int j = 0; j < o.length; j++) {
            o[j] = (before[j] * decay - after[j]) / scaledLr;
        }
        return o;
    }

    /** Fails unless {@code got} has as many values as {@code expected}. */
    static void checkLengths(double[] got, double[] expected) {
        if (got.length != expected.length) {
            throw new AssertionError("got " + got.length + " values, expected " + expected.length);
        }
    }
}
