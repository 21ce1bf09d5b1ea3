package dev.muon.examples;

import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The Fashion-MNIST images and labels as tensors: images {@code [n, 1, 28, 28]} float, normalised with the data
 * set's mean and standard deviation; labels {@code [n]} int64 in 0..9.
 *
 * <p>Where it comes from, in order: the {@code --data} directory if one is given, then where Debian's
 * {@code dataset-fashion-mnist} package installs the IDX files ({@value #DEBIAN_DIR}), and when neither holds the
 * four files, a generated stand-in of the same shape, which {@link #source()} and {@link #generated()} say plainly.
 *
 * @param trainImages the training images
 * @param trainLabels the training labels
 * @param testImages  the test images
 * @param testLabels  the test labels
 * @param source      where the data came from, in words
 * @param generated   true for the generated stand-in, whose numbers say nothing about Fashion-MNIST
 */
public record FashionMnistData(Tensor trainImages, Tensor trainLabels, Tensor testImages, Tensor testLabels,
                               String source, boolean generated) {
    /** Where {@code apt-get install dataset-fashion-mnist} puts the files ({@code dpkg -L} lists them). */
    public static final String DEBIAN_DIR = "/usr/share/datasets/fashion-mnist";
    /** The four files, as the original distribution names them. */
    static final List<String> FILES = List.of("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");

    // Per-pixel mean and standard deviation of the Fashion-MNIST training set, scaled to [0, 1].
    private static final float MEAN = 0.2860f;
    private static final float STD = 0.3530f;
    private static final int SIDE = 28;
    private static final int CLASSES = 10;

    /**
     * Loads from {@code dataDir} when given and complete, else from {@link #DEBIAN_DIR}, else generates a stand-in.
     *
     * @param dataDir   a directory with the four IDX files (gzip or not), or empty to look only at the Debian path
     * @param debianDir the Debian path (a parameter so that tests can point it elsewhere)
     * @param seed      the seed of the generated stand-in
     * @return the data
     * @throws UncheckedIOException if a directory has the files but one cannot be read
     */
    public static FashionMnistData locate(Optional<Path> dataDir, Path debianDir, long seed) {
        if (dataDir.isPresent()) {
            if (hasFiles(dataDir.get())) {
                return load(dataDir.get());
            }
            System.out.println("No Fashion-MNIST IDX files in --data " + dataDir.get() + "; looking in " + debianDir);
        }
        if (hasFiles(debianDir)) {
            return load(debianDir);
        }
        System.out.println("NOTE: Fashion-MNIST not found (install it with `apt-get install dataset-fashion-mnist`,"
                + " or pass --data DIR). Training on a GENERATED stand-in of the same shape instead: its numbers say"
                + " nothing about Fashion-MNIST.");
        return generated(seed, 10_000, 2_000);
    }

    /**
     * Whether a directory holds all four files, each either plain or gzip.
     *
     * @param dir the directory
     * @return true if all four are there
     */
    static boolean hasFiles(Path dir) {
        for (String name : FILES) {
            if (find(dir, name) == null) {
                return false;
            }
        }
        return true;
    }

    private static Path find(Path dir, String name) {
        for (Path candidate : List.of(dir.resolve(name + ".gz"), dir.resolve(name))) {
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    /**
     * Reads the four IDX files of a directory.
     *
     * @param dir the directory
     * @return the data
     * @throws UncheckedIOException     if a file cannot be read
     * @throws IllegalArgumentException if the files do not have matching counts or 28x28 images
     */
    public static FashionMnistData load(Path dir) {
        try {
            IdxFile trainImages = IdxFile.read(find(dir, FILES.get(0)));
            IdxFile trainLabels = IdxFile.read(find(dir, FILES.get(1)));
            IdxFile testImages = IdxFile.read(find(dir, FILES.get(2)));
            IdxFile testLabels = IdxFile.read(find(dir, FILES.get(3)));
            return new FashionMnistData(images(trainImages, trainLabels), labels(trainLabels),
                    images(testImages, testLabels), labels(testLabels),
                    "Fashion-MNIST from " + dir + " (" + trainImages.count() + " train, " + testImages.count()
                            + " test)", false);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Fashion-MNIST from " + dir, e);
        }
    }

    private static Tensor images(IdxFile images, IdxFile labels) {
        if (images.itemSize() != SIDE * SIDE) {
            throw new IllegalArgumentException("images must be 28x28, got " + images);
        }
        if (images.count() != labels.count()) {
            throw new IllegalArgumentException("image and label counts must match, got " + images + " and " + labels);
        }
        Tensor out = torch.empty(images.count(), 1, SIDE, SIDE);
        copy(images.bytes(), out, v -> ((v / 255f) - MEAN) / STD);
        return out;
    }

    private static Tensor labels(IdxFile labels) {
        Tensor out = torch.empty(labels.count());
        copy(labels.bytes(), out, v -> v);
        return out.to(torch.ScalarType.Long);
    }

    /** Float conversion of unsigned bytes. */
    private interface ByteToFloat {
        float apply(int unsigned);
    }

    private static void copy(byte[] bytes, Tensor contiguousFloat, ByteToFloat f) {
        // Chunked, because one JNI call per value would take seconds for 47 M pixels.
        FloatPointer dst = new FloatPointer(contiguousFloat.data_ptr());
        float[] chunk = new float[1 << 16];
        for (int start = 0; start < bytes.length; start += chunk.length) {
            int n = Math.min(chunk.length, bytes.length - start);
            for (int i = 0; i < n; i++) {
                chunk[i] = f.apply(bytes[start + i] & 0xFF);
            }
            dst.position(start).put(chunk, 0, n);
        }
    }

    /**
     * A stand-in of the same shape, for machines without the data set: each class is a fixed random 28x28
     * pattern, and each image is its class's pattern under heavy Gaussian noise, so that the task is learnable
     * but not trivial.
     *
     * @param seed  the seed
     * @param train the number of training images
     * @param test  the number of test images
     * @return the data, marked as generated
     */
    public static FashionMnistData generated(long seed, int train, int test) {
        torch.manual_seed(seed);
        Tensor patterns = torch.randn(CLASSES, 1, SIDE, SIDE);
        Tensor labels = torch.randint(CLASSES, new long[] {train + test}).to(torch.ScalarType.Long);
        Tensor images = patterns.index_select(0, labels).add(torch.randn(train + test, 1, SIDE, SIDE).mul(
                new org.bytedeco.pytorch.Scalar(3.0)));
        return new FashionMnistData(images.narrow(0, 0, train), labels.narrow(0, 0, train),
                images.narrow(0, train, test), labels.narrow(0, train, test),
                "GENERATED stand-in (seed " + seed + ", " + train + " train, " + test + " test), not Fashion-MNIST",
                true);
    }

    /**
     * The first {@code n} training examples (Fashion-MNIST's training set is already shuffled).
     *
     * @param n how many; 0 or more than there are keeps them all
     * @return this data with a smaller training set
     */
    public FashionMnistData withTrainSize(int n) {
        long have = trainImages.size(0);
        if (n <= 0 || n >= have) {
            return this;
        }
        return new FashionMnistData(trainImages.narrow(0, 0, n), trainLabels.narrow(0, 0, n), testImages,
                testLabels, source + ", first " + n + " training images", generated);
    }
}
