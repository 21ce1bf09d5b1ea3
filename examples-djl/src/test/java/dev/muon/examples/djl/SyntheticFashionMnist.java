package dev.muon.examples.djl;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.zip.GZIPOutputStream;

/**
 * Writes a small, learnable stand-in of Fashion-MNIST's four IDX files (gzip, as Debian ships them): each class
 * is a fixed random 28x28 pattern, each image its class's pattern under noise.
 */
final class SyntheticFashionMnist {
    private SyntheticFashionMnist() {
    }

    /**
     * Writes the four files into {@code dir}.
     *
     * @param dir   the directory
     * @param train the number of training images
     * @param test  the number of test images
     * @throws IOException if a file cannot be written
     */
    static void write(Path dir, int train, int test) throws IOException {
        Random random = new Random(9);
        int[][] patterns = new int[10][28 * 28];
        for (int[] pattern : patterns) {
            for (int i = 0; i < pattern.length; i++) {
                pattern[i] = random.nextInt(256);
            }
        }
        for (String set : new String[] {"train", "t10k"}) {
            int n = set.equals("train") ? train : test;
            byte[] images = new byte[n * 28 * 28];
            byte[] labels = new byte[n];
            for (int k = 0; k < n; k++) {
                int label = random.nextInt(10);
                labels[k] = (byte) label;
                for (int i = 0; i < 28 * 28; i++) {
                    int value = patterns[label][i] + (int) (random.nextGaussian() * 60);
                    images[k * 28 * 28 + i] = (byte) Math.max(0, Math.min(255, value));
                }
            }
            idx(dir.resolve(set + "-images-idx3-ubyte.gz"), images, n, 28, 28);
            idx(dir.resolve(set + "-labels-idx1-ubyte.gz"), labels, n);
        }
    }

    /** Writes one gzip IDX file of unsigned bytes. */
    static void idx(Path file, byte[] data, int... dims) throws IOException {
        try (OutputStream raw = Files.newOutputStream(file);
             DataOutputStream out = new DataOutputStream(new GZIPOutputStream(raw))) {
            out.writeByte(0);
            out.writeByte(0);
            out.writeByte(0x08);
            out.writeByte(dims.length);
            for (int d : dims) {
                out.writeInt(d);
            }
            out.write(data);
        }
    }
}
