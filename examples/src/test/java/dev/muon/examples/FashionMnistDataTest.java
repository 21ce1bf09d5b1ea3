package dev.muon.examples;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FashionMnistDataTest {
    @TempDir
    Path dir;

    /** Writes a tiny data set: 3 training and 2 test images, pixel value = image index * 10, label = index. */
    private void writeTinyDataSet(Path target, boolean gzip) throws IOException {
        String gz = gzip ? ".gz" : "";
        IdxFileTest.write(target.resolve("train-images-idx3-ubyte" + gz), IdxFileTest.idx(0x08,
                new int[] {3, 28, 28}, pixels(3)));
        IdxFileTest.write(target.resolve("train-labels-idx1-ubyte" + gz), IdxFileTest.idx(0x08, new int[] {3},
                new byte[] {0, 1, 2}));
        IdxFileTest.write(target.resolve("t10k-images-idx3-ubyte" + gz), IdxFileTest.idx(0x08,
                new int[] {2, 28, 28}, pixels(2)));
        IdxFileTest.write(target.resolve("t10k-labels-idx1-ubyte" + gz), IdxFileTest.idx(0x08, new int[] {2},
                new byte[] {0, 1}));
    }

    private static byte[] pixels(int images) {
        byte[] out = new byte[images * 28 * 28];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) (i / (28 * 28) * 10);
        }
        return out;
    }

    @Test
    void locate_dataDirWithFiles_loadsThem() throws IOException {
        writeTinyDataSet(dir, true);
        try (PointerScope scope = new PointerScope()) {
            FashionMnistData data = FashionMnistData.locate(Optional.of(dir), dir.resolve("no-debian"), 1);
            assertFalse(data.generated());
            assertArrayEquals(new long[] {3, 1, 28, 28}, data.trainImages().sizes().vec().get());
            assertArrayEquals(new long[] {2}, data.testLabels().sizes().vec().get());
            assertEquals(torch.ScalarType.Long.value, data.trainLabels().scalar_type().value);
            assertEquals(2, data.trainLabels().get(2).item_long());
            // Pixel 20 of image 2, normalised: (20 / 255 - mean) / std.
            double expected = (20 / 255.0 - 0.2860) / 0.3530;
            assertEquals(expected, data.trainImages().get(2).flatten().get(5).item_double(), 1e-5);
        }
    }

    @Test
    void locate_plainFilesInDebianDir_areFound() throws IOException {
        writeTinyDataSet(dir, false);
        try (PointerScope scope = new PointerScope()) {
            FashionMnistData data = FashionMnistData.locate(Optional.empty(), dir, 1);
            assertFalse(data.generated());
            assertTrue(data.source().contains(dir.toString()), data.source());
        }
    }

    @Test
    void locate_noDataOptionAndNoDebianCopy_fallsBackToGeneratedAndSaysSo() {
        try (PointerScope scope = new PointerScope()) {
            FashionMnistData data = FashionMnistData.locate(Optional.empty(), dir.resolve("also-missing"), 7);
            assertTrue(data.generated());
            assertTrue(data.source().contains("GENERATED"), data.source());
            assertArrayEquals(new long[] {10_000, 1, 28, 28}, data.trainImages().sizes().vec().get());
            assertEquals(10_000, data.trainLabels().size(0));
        }
    }

    @Test
    void generated_isReproducibleFromItsSeed() {
        try (PointerScope scope = new PointerScope()) {
            FashionMnistData a = FashionMnistData.generated(3, 64, 16);
            FashionMnistData b = FashionMnistData.generated(3, 64, 16);
            assertTrue(a.trainImages().equal(b.trainImages()));
            assertTrue(a.testLabels().equal(b.testLabels()));
        }
    }

    @Test
    void withTrainSize_keepsTheFirstImages() {
        try (PointerScope scope = new PointerScope()) {
            FashionMnistData data = FashionMnistData.generated(3, 64, 16).withTrainSize(10);
            assertEquals(10, data.trainImages().size(0));
            assertEquals(16, data.testImages().size(0));
        }
    }
}
