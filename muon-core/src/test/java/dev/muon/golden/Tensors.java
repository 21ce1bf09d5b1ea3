package dev.muon.golden;

import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/** Conversions between golden data (doubles) and libtorch tensors, and the error measures the README defines. */
public final class Tensors {
    private Tensors() {
    }

    /** A new tensor of the given dtype holding {@code data} (row-major). */
    public static Tensor of(double[] data, long[] shape, ScalarType dtype) {
        Tensor t = Tensor.create(data, shape);
        return dtype.value == ScalarType.Double.value ? t : t.to(dtype);
    }

    /** A new tensor holding a golden entry. */
    public static Tensor of(GoldenCase.Entry entry, ScalarType dtype) {
        return of(entry.data(), entry.shape(), dtype);
    }

    /** The tensor's values as doubles, row-major. */
    public static double[] values(Tensor t) {
        Tensor d = t.to(ScalarType.Double).contiguous();
        double[] out = new double[(int) d.numel()];
        new DoublePointer(d.data_ptr()).get(out);
        return out;
    }

    /** ‖got − expected‖_F / ‖expected‖_F (or the absolute norm when expected is zero). */
    public static double relativeError(Tensor got, double[] expected) {
        return relativeError(values(got), expected);
    }

    /** max |got − expected|. */
    public static double maxAbsError(Tensor got, double[] expected) {
        double[] g = values(got);
        ErrorMeasures.checkLengths(g, expected);
        double max = 0;
        for (int i = 0; i < g.length; i++) {
            double d = Math.abs(g[i] - expected[i]);
            if (!(d <= max)) {
                max = Double.isNaN(d) ? Double.POSITIVE_INFINITY : d;
            }
        }
        return max;
    }

    /** ‖a − b‖_F / ‖b‖_F for plain arrays. */
    public static double relativeError(double[] got, double[] expected) {
        return ErrorMeasures.relativeError(got, expected);
    }
}
