package dev.muon.examples.djl;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.ArrayDataset;
import dev.muon.examples.IdxFile;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Fashion-MNIST read from its four IDX files into DJL {@link ArrayDataset}s: images {@code [n, 784]} float32,
 * normalised with the training set's mean and standard deviation as the bytedeco example does, labels {@code [n]}
 * in 0..9. The files are read with the examples' {@link IdxFile}; DJL's own {@code FashionMnist} dataset class is
 * not used, because it downloads its files at run time.
 *
 * <pre>{@code
 * FashionMnistDatasets data = FashionMnistDatasets.load(manager, Path.of(FashionMnistDatasets.DEBIAN_DIR), 0, 128);
 * }</pre>
 *
 * @param train  the training set, shuffled into batches (DJL's random sampler: seed it with
 *               {@code Engine.getInstance().setRandomSeed})
 * @param test   the test set, in order
 * @param source where the data came from, in words
 */
public record FashionMnistDatasets(ArrayDataset train, ArrayDataset test, String source) {
    /** Where {@code apt-get install dataset-fashion-mnist} puts the files ({@code dpkg -L} lists them). */
    public static final String DEBIAN_DIR = "/usr/share/datasets/fashion-mnist";
    /** The four files, as the original distribution names them. */
    static final List<String> FILES = List.of("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");

    // Per-pixel mean and standard deviation of the Fashion-MNIST training set, scaled to [0, 1].
    private static final float MEAN = 0.2860f;
    private static final float STD = 0.3530f;
    private static final int PIXELS = 28 * 28;

    /**
     * Reads the four IDX files of a directory, each plain or gzip.
     *
     * @param manager   the manager of the arrays
     * @param dir       the directory
     * @param trainSize training images used (the first ones; the set is shuffled already), 0 for all
     * @param batch     the batch size of both sets
     * @return the datasets
     * @throws IllegalArgumentException if a file is missing, or the files are not 28x28 images with one label each
     * @throws UncheckedIOException     if a file cannot be read
     */
    public static FashionMnistDatasets load(NDManager manager, Path dir, int trainSize, int batch) {
        try {
            IdxFile trainImages = IdxFile.read(find(dir, FILES.get(0)));
            IdxFile trainLabels = IdxFile.read(find(dir, FILES.get(1)));
            IdxFile testImages = IdxFile.read(find(dir, FILES.get(2)));
            IdxFile testLabels = IdxFile.read(find(dir, FILES.get(3)));
            int n = trainSize <= 0 ? trainImages.count() : Math.min(trainSize, trainImages.count());
            ArrayDataset train = dataset(manager, trainImages, trainLabels, n, batch, true);
            ArrayDataset test = dataset(manager, testImages, testLabels, testImages.count(), batch, false);
            return new FashionMnistDatasets(train, test, "Fashion-MNIST from " + dir + " (" + n + " train, "
                    + testImages.count() + " test)");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Fashion-MNIST from " + dir, e);
        }
    }

    private static Path find(Path dir, String name) {
        for (Path candidate : List.of(dir.resolve(name + ".gz"), dir.resolve(name))) {
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new IllegalArgumentException("no " + name + "[.gz] in " + dir + ": install Debian's "
                + "dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or pass --data DIR");
    }

    private static ArrayDataset dataset(NDManager manager, IdxFile images, IdxFile labels, int n, int batch,
                                        boolean shuffle) {
        if (images.itemSize() != PIXELS) {
            throw new IllegalArgumentException("images must be 28x28, got " + images);
        }
        if (images.count() != labels.count() || labels.itemSize() != 1) {
            throw new IllegalArgumentException("one label per image expected, got " + images + " and " + labels);
        }
        float[] x = new float[n * PIXELS];
        for (int i = 0; i < x.length; i++) {
            x[i] = (images.unsigned(i) / 255f - MEAN) / STD;
        }
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            y[i] = labels.unsigned(i);
        }
        return new ArrayDataset.Builder().setData(manager.create(x, new Shape(n, PIXELS)))
                .optLabels(manager.create(y, new Shape(n))).setSampling(batch, shuffle).build();
    }
}
