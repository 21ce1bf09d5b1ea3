package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import dev.muon.golden.ErrorMeasures;

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
        return ErrorMeasures.relativeError(got, expected);
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
