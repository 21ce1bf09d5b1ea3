package dev.muon.examples;

/**
 * The mean and the sample standard deviation of a run's values, as the Fashion-MNIST tables and the Muon study
 * report them over seeds.
 */
public final class SampleStats {
    private SampleStats() {
    }

    /**
     * The arithmetic mean.
     *
     * @param values the values, at least one
     * @return their mean
     */
    public static double mean(double[] values) {
        double sum = 0;
        for (double v : values) {
            sum += v;
        }
        return sum / values.length;
    }

    /**
     * The sample standard deviation, {@code n − 1} in the denominator.
     *
     * @param values the values
     * @return their sample standard deviation; 0 for fewer than two values
     */
    public static double sd(double[] values) {
        if (values.length < 2) {
            return 0;
        }
        double m = mean(values);
        double sum = 0;
        for (double v : values) {
            sum += (v - m) * (v - m);
        }
        return Math.sqrt(sum / (values.length - 1));
    }
}
