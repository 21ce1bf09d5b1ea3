package dev.muon.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * One training example of the tests: 8 features, one of 4 labels.
 *
 * @param x     the features
 * @param label the class
 */
public record Sample(float[] x, int label) implements Serializable {
    static final int FEATURES = 8;
    static final int CLASSES = 4;

    /** {@code n} seeded examples: the label is the largest of four sums of features, plus noise. */
    static List<Sample> generate(int n, long seed) {
        Random random = new Random(seed);
        List<Sample> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            float[] x = new float[FEATURES];
            for (int j = 0; j < FEATURES; j++) {
                x[j] = (float) random.nextGaussian();
            }
            int label = 0;
            for (int c = 1; c < CLASSES; c++) {
                if (x[2 * c] + x[2 * c + 1] > x[2 * label] + x[2 * label + 1]) {
                    label = c;
                }
            }
            out.add(new Sample(x, label));
        }
        return out;
    }

    /** Spark's slice {@code i} of {@code numSlices} of a parallelized list (ParallelCollectionRDD's split). */
    static <T> List<T> slice(List<T> all, int i, int numSlices) {
        int start = (int) ((long) i * all.size() / numSlices);
        int end = (int) ((long) (i + 1) * all.size() / numSlices);
        return all.subList(start, end);
    }
}
