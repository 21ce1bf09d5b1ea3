package dev.muon.state;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reading {@code torch.save} files without running anything: a real file of Python's PyTorch reads, and every
 * crafted storage or view is refused before libtorch sees its bytes, so that no view reaches outside its record.
 */
@ExtendWith(NativeScopePerTest.class)
class TorchLoadTest {
    @TempDir
    Path dir;

    /** {@code torch.optim.AdamW(...).state_dict()} saved by Python's PyTorch 1.13 (Debian's python3-torch). */
    @Test
    void pythonsFile_reads() throws Exception {
        Path file = Path.of(TorchLoadTest.class.getResource("/torch/adamw-state-dict-torch-1.13.pt").toURI());
        try (TorchLoad load = TorchLoad.open(file)) {
            Map<?, ?> root = assertInstanceOf(Map.class, load.root());
            Map<?, ?> state = assertInstanceOf(Map.class, ((Map<?, ?>) root.get("state")).get(0L));
            Tensor expAvg = load.tensor((PickleValues.TensorRef) state.get("exp_avg"), "exp_avg");
            assertArrayEquals(new long[]{3, 4}, expAvg.shape());
            // One AdamW step from zero moments: exp_avg = (1 - 0.9) * grad, and the gradient of a sum is 1.
            assertTrue(expAvg.allclose(torch.full(new long[]{3, 4}, new org.bytedeco.pytorch.Scalar(0.1))));
            Tensor step = load.tensor((PickleValues.TensorRef) state.get("step"), "step");
            assertEquals(1.0, step.item_double());
            assertEquals(0.01, ((Map<?, ?>) ((java.util.List<?>) root.get("param_groups")).get(0)).get("weight_decay"));
        }
    }

    private static byte[] floats(int count) {
        ByteBuffer b = ByteBuffer.allocate(4 * count).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < count; i++) {
            b.putFloat(i);
        }
        return b.array();
    }

    private Path oneTensor(long numel, long offset, long[] size, long[] stride, byte[] record) {
        byte[] pickle = PickleBytes.protocol2().tensor("FloatStorage", "0", numel, offset, size, stride).stop();
        return PickleBytes.zip(dir.resolve("t.pt"), pickle, Map.of("data/0", record));
    }

    @Test
    void stridedView_isCopied_withTheViewsValues() throws IOException {
        // A transposed 3 x 4 view of 12 floats, starting at element 0.
        Path file = oneTensor(12, 0, new long[]{4, 3}, new long[]{1, 4}, floats(12));
        try (TorchLoad load = TorchLoad.open(file)) {
            Tensor t = load.tensor((PickleValues.TensorRef) load.root(), "t");
            assertTrue(t.is_contiguous());
            assertTrue(t.equal(torch.arange(new org.bytedeco.pytorch.Scalar(12)).to(torch.ScalarType.Float)
                    .reshape(3, 4).t()));
        }
    }

    static Stream<Arguments> badViews() {
        long big = 1L << 30;
        return Stream.of(
                Arguments.of("negativeOffset", 128L, -big, new long[]{4}, new long[]{1}, 512,
                        "has storage offset -1073741824; it must be >= 0"),
                Arguments.of("offsetFarPast", 128L, big, new long[]{4}, new long[]{1}, 512,
                        "has a view (offset 1073741824, size [4], stride [1]) that reaches element 1073741827 of a "
                                + "storage of 128 elements"),
                Arguments.of("hugeStride", 128L, 0L, new long[]{2, 2}, new long[]{big, 1}, 512,
                        "has a view (offset 0, size [2, 2], stride [1073741824, 1]) that reaches element 1073741825 "
                                + "of a storage of 128 elements"),
                Arguments.of("startsPastRecord", 128L, 192L, new long[]{4}, new long[]{1}, 512,
                        "has a view (offset 192, size [4], stride [1]) that reaches element 195 of a storage of 128 "
                                + "elements"),
                Arguments.of("negativeStride", 128L, 10L, new long[]{4}, new long[]{-1}, 512,
                        "has size [4] and stride [-1]; both must be >= 0"),
                Arguments.of("overflowingExtent", 128L, 0L, new long[]{Long.MAX_VALUE / 2, 4},
                        new long[]{4, 1}, 512, "has a view (offset 0, size [4611686018427387903, 4], stride [4, 1]) "
                                + "whose extent overflows a long"),
                Arguments.of("emptyViewPastEnd", 128L, 129L, new long[]{0}, new long[]{1}, 512,
                        "has storage offset 129 past its storage of 128 elements"),
                Arguments.of("shortRecord", 128L, 0L, new long[]{128}, new long[]{1}, 4,
                        "declares 128 elements of FloatStorage (512 bytes), but record 'archive/data/0' holds 4 "
                                + "bytes"),
                Arguments.of("numelOverflowsBytes", Long.MAX_VALUE / 2, 0L, new long[]{1}, new long[]{1}, 4,
                        "declares a storage of 4611686018427387903 elements, whose bytes overflow a long"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badViews")
    void badViewOrStorage_isRefused_beforeLibtorchSeesIt(String name, long numel, long offset, long[] size,
                                                       long[] stride, int recordBytes, String rule) throws IOException {
        Path file = oneTensor(numel, offset, size, stride, new byte[recordBytes]);
        try (TorchLoad load = TorchLoad.open(file)) {
            FormatException e = assertThrows(FormatException.class,
                    () -> load.tensor((PickleValues.TensorRef) load.root(), "muon.state[0].momentum_buffer"));
            assertEquals("muon.state[0].momentum_buffer", e.entry());
            assertEquals(rule, e.rule());
        }
    }

    @Test
    void emptyView_atTheEnd_isRead() throws IOException {
        Path file = oneTensor(4, 4, new long[]{0, 3}, new long[]{3, 1}, floats(4));
        try (TorchLoad load = TorchLoad.open(file)) {
            assertArrayEquals(new long[]{0, 3}, load.tensor((PickleValues.TensorRef) load.root(), "t").shape());
        }
    }

    @Test
    void missingRecord_isRefused() throws IOException {
        byte[] pickle = PickleBytes.protocol2().tensor("FloatStorage", "7", 4, 0, new long[]{4}, new long[]{1})
                .stop();
        Path file = PickleBytes.zip(dir.resolve("t.pt"), pickle, Map.of());
        try (TorchLoad load = TorchLoad.open(file)) {
            assertEquals("has its storage in record 'archive/data/7', which the zip does not hold",
                    assertThrows(FormatException.class,
                            () -> load.tensor((PickleValues.TensorRef) load.root(), "t")).rule());
        }
    }

    static Stream<Arguments> badZips() {
        byte[] none = PickleBytes.protocol2().op('N').stop();
        return Stream.of(
                Arguments.of("noPickle", (ZipWriter) z -> PickleBytes.stored(z, "archive/version", "3\n".getBytes()),
                        "holds no <archive>/data.pkl record, so it is not a torch.save file"),
                Arguments.of("twoPickles", (ZipWriter) z -> {
                    PickleBytes.stored(z, "a/data.pkl", none);
                    PickleBytes.stored(z, "b/data.pkl", none);
                }, "holds two pickles, 'a/data.pkl' and 'b/data.pkl'"),
                Arguments.of("bigEndian", (ZipWriter) z -> {
                    PickleBytes.stored(z, "archive/data.pkl", none);
                    PickleBytes.stored(z, "archive/byteorder", "big".getBytes());
                }, "must be 'little', got 'big'"),
                Arguments.of("compressedPickle", (ZipWriter) z -> {
                    z.putNextEntry(new ZipEntry("archive/data.pkl"));
                    z.write(none);
                    z.closeEntry();
                }, "is compressed; torch.save stores its records uncompressed, and a compressed one could inflate "
                        + "beyond the file"),
                Arguments.of("torchScriptCode", (ZipWriter) z -> {
                    PickleBytes.stored(z, "archive/data.pkl", PickleBytes.protocol2()
                            .global("__torch__.Evil", "Evil").op(')', 0x81).stop());
                    PickleBytes.stored(z, "archive/code/__torch__/Evil.py", ("def __setstate__(self, s):\n"
                            + "    torch.from_file('/tmp/pwned', True, 4)\n").getBytes());
                }, "asks for the global __torch__.Evil.Evil, which is not allowed"));
    }

    /** Writes the records of a crafted zip. */
    @FunctionalInterface
    interface ZipWriter {
        void write(ZipOutputStream zip) throws IOException;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badZips")
    void badZip_isRefused(String name, ZipWriter records, String rule) throws IOException {
        Path file = dir.resolve(name + ".pt");
        try (ZipOutputStream z = new ZipOutputStream(Files.newOutputStream(file))) {
            records.write(z);
        }
        FormatException e = assertThrows(FormatException.class, () -> TorchLoad.open(file).close());
        assertTrue(e.rule().startsWith(rule), e.getMessage());
    }

    @Test
    void notAZip_isRefused() throws IOException {
        Path file = Files.write(dir.resolve("x.pt"), "not a zip at all".getBytes());
        FormatException e = assertThrows(FormatException.class, () -> TorchLoad.open(file).close());
        assertTrue(e.rule().startsWith("is not a zip archive, as torch.save writes"), e.getMessage());
    }

    @Test
    void pickleOverTheBound_isRefused_beforeItIsRead() throws IOException {
        Map<String, byte[]> none = new LinkedHashMap<>();
        byte[] huge = new byte[(int) TorchLoad.MAX_PICKLE_BYTES + 1];
        Path file = PickleBytes.zip(dir.resolve("huge.pt"), huge, none);
        FormatException e = assertThrows(FormatException.class, () -> TorchLoad.open(file).close());
        assertEquals("has 67108865 bytes; at most 67108864 are read", e.rule());
    }
}
