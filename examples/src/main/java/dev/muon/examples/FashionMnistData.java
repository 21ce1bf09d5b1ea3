package dev.muon.examples;

import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.EOFException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.zip.ZipException;

/**
 * The Fashion-MNIST images and labels as tensors: images {@code [n, 1, 28, 28]} float, normalised with the data
 * set's mean and standard deviation; labels {@code [n]} int64 in 0..9.
 *
 * <p>Where it comes from: the {@code --data} folder if one is given (and nothing else: a folder that lacks a file
 * is an error, not a reason to look elsewhere); else where Debian's {@code dataset-fashion-mnist} package installs
 * the IDX files ({@value #DEBIAN_DIR}); else a generated stand-in of the same shape, which {@link #source()} and
 * {@link #generated()} say plainly.
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
     * Loads from {@code dataDir} when given, else from {@link #DEBIAN_DIR} when it holds the four files, else
     * generates a stand-in. A folder given explicitly is never replaced by another copy: if it lacks a file, that is
     * an error.
     *
     * @param dataDir   a folder with the four IDX files (gzip or not), or empty to look only at the Debian path
     * @param debianDir the Debian path (a parameter so that tests can point it elsewhere)
     * @param seed      the seed of the generated stand-in
     * @return the data
     * @throws DataError if {@code dataDir} is not a folder, lacks a file, or a file is damaged
     */
    public static FashionMnistData locate(Optional<Path> dataDir, Path debianDir, long seed) {
        if (dataDir.isPresent()) {
            Path dir = dataDir.get();
            if (!Files.isDirectory(dir)) {
                throw new DataError("--data " + dir + ": " + (Files.exists(dir) ? "not a folder" : "no such folder")
                        + "; it must be the folder of the four Fashion-MNIST IDX files");
            }
            List<String> missing = missing(dir);
            if (!missing.isEmpty()) {
                throw new DataError("--data " + dir + ": no " + String.join(", ", missing) + " there (plain or"
                        + " .gz); the folder must hold all four Fashion-MNIST IDX files");
            }
            return load(dir);
        }
        if (missing(debianDir).isEmpty()) {
            return load(debianDir);
        }
        System.out.println("NOTE: Fashion-MNIST not found (install it with `apt-get install dataset-fashion-mnist`,"
                + " or pass --data DIR). Training on a GENERATED stand-in of the same shape instead: its numbers say"
                + " nothing about Fashion-MNIST.");
        return generated(seed, 10_000, 2_000);
    }

    /**
     * The files a folder lacks, of the four, each either plain or gzip.
     *
     * @param dir the folder
     * @return the names of the missing files, empty if all four are there
     */
    static List<String> missing(Path dir) {
        List<String> missing = new ArrayList<>();
        for (String name : FILES) {
            if (find(dir, name) == null) {
                missing.add(name);
            }
        }
        return missing;
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
     * Reads the four IDX files of a folder that holds them.
     *
     * @param dir the folder
     * @return the data
     * @throws DataError naming the file, if one cannot be read, is damaged, or does not match the others
     */
    public static FashionMnistData load(Path dir) {
        NamedIdx trainImages = read(find(dir, FILES.get(0)));
        NamedIdx trainLabels = read(find(dir, FILES.get(1)));
        NamedIdx testImages = read(find(dir, FILES.get(2)));
        NamedIdx testLabels = read(find(dir, FILES.get(3)));
        return new FashionMnistData(images(trainImages, trainLabels), labels(trainLabels),
                images(testImages, testLabels), labels(testLabels),
                "Fashion-MNIST from " + dir + " (" + trainImages.count() + " train, " + testImages.count()
                        + " test)", false);
    }

    /** Reads one IDX file, every failure as one line that names it. */
    private static NamedIdx read(Path file) {
        try {
            return new NamedIdx(file, IdxFile.read(file));
        } catch (EOFException e) {
            throw new DataError(file + ": the file ends early, it is truncated", e);
        } catch (ZipException e) {
            throw new DataError(file + ": not a valid gzip file (" + e.getMessage() + ")", e);
        } catch (IOException e) {
            // GZIPInputStream reports a gzip stream cut short as "Unexpected end of ZLIB input stream".
            String reason = String.valueOf(e.getMessage()).contains("Unexpected end")
                    ? "the file ends early, it is truncated (" + e.getMessage() + ")" : DataError.reason(e);
            throw new DataError(file + ": " + reason, e);
        } catch (IllegalArgumentException e) {
            throw new DataError(file + ": not an IDX file of unsigned bytes: " + e.getMessage(), e);
        }
    }

    /** An IDX file and where it came from, for the messages. */
    private record NamedIdx(Path path, IdxFile idx) {
        int count() {
            return idx.count();
        }
    }

    private static Tensor images(NamedIdx images, NamedIdx labels) {
        int[] dims = images.idx().dims();
        if (dims.length != 3 || dims[1] != SIDE || dims[2] != SIDE) {
            throw new DataError(images.path() + ": images must be [count, 28, 28], got "
                    + java.util.Arrays.toString(dims));
        }
        if (images.count() != labels.count()) {
            throw new DataError(images.path() + " holds " + images.count() + " images and " + labels.path()
                    + " " + labels.count() + " labels: the counts must match");
        }
        Tensor out = torch.empty(images.count(), 1, SIDE, SIDE);
        copy(images.idx().bytes(), out, v -> ((v / 255f) - MEAN) / STD);
        return out;
    }

    private static Tensor labels(NamedIdx labels) {
        for (int i = 0; i < labels.count(); i++) {
            if (labels.idx().unsigned(i) >= CLASSES) {
                throw new DataError(labels.path() + ": label " + i + " is " + labels.idx().unsigned(i)
                        + ", labels must be 0 to 9");
            }
        }
        Tensor out = torch.empty(labels.count());
        copy(labels.idx().bytes(), out, v -> v);
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
