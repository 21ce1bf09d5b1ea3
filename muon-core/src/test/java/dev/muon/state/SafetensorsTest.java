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
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The safetensors layout: what is written reads back bit for bit, and every rule of a header is checked before a
 * tensor is made, each broken rule refused with the entry it concerns.
 */
@ExtendWith(NativeScopePerTest.class)
class SafetensorsTest {
    @TempDir
    Path dir;

    @Test
    void tensorsOfEveryKind_roundTrip_bitForBit_withTheMetadata() throws IOException {
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        tensors.put("f64", torch.randn(3, 2).to(torch.ScalarType.Double));
        tensors.put("f32/with slash", torch.randn(4, 5));
        tensors.put("bf16", torch.randn(7).to(torch.ScalarType.BFloat16));
        tensors.put("f16", torch.randn(2, 2, 2).to(torch.ScalarType.Half));
        tensors.put("i64", torch.arange(new org.bytedeco.pytorch.Scalar(6)));
        tensors.put("empty", torch.zeros(0, 4));
        tensors.put("scalar", torch.scalar_tensor(new org.bytedeco.pytorch.Scalar(2.5)));
        tensors.put("strided", torch.randn(4, 6).t());
        Path file = dir.resolve("t.safetensors");
        String digest;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            digest = Safetensors.write(ch, Map.of("format", "test"), tensors, TensorBytes.TORCH);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            Safetensors.Header header = Safetensors.readHeader(ch);
            assertEquals(Map.of("format", "test", "sha256", digest), header.metadata());
            assertEquals(0, header.dataStart() % 8, "the data starts 8-byte aligned");
            Map<String, Tensor> back = Safetensors.readTensors(ch, header, TensorBytes.TORCH);
            assertEquals(List.copyOf(tensors.keySet()), List.copyOf(back.keySet()));
            for (String name : tensors.keySet()) {
                assertArrayEquals(tensors.get(name).shape(), back.get(name).shape(), name);
                assertTrue(tensors.get(name).equal(back.get(name)), name);
                assertEquals(tensors.get(name).scalar_type().toString(), back.get(name).scalar_type().toString());
            }
        }
    }

    /** A file of the given header text and data bytes, its length prefix right. */
    private Path file(String header, byte[] data) throws IOException {
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + json.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(json.length).put(json).put(data);
        return Files.write(dir.resolve("crafted.safetensors"), b.array());
    }

    private static String entry(String dtype, String shape, String offsets) {
        return "{\"t\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}}";
    }

    static Stream<Arguments> badHeaders() {
        return Stream.of(
                Arguments.of("notAnObject", "[]", 0, "the header", "must be a JSON object"),
                Arguments.of("metadataNotStrings", "{\"__metadata__\":{\"a\":1}}", 0, "__metadata__.a",
                        "must be a string"),
                Arguments.of("extraKey", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
                        "tensor 't'", "must be an object of exactly dtype, shape and data_offsets"),
                Arguments.of("unknownDtype", entry("F8_E4M3", "[1]", "[0,1]"), 1, "tensor 't'",
                        "has dtype 'F8_E4M3'; muon-core reads [F64, F32, F16, BF16, I64]"),
                Arguments.of("int32", entry("I32", "[1]", "[0,4]"), 4, "tensor 't'",
                        "has dtype 'I32'; muon-core reads [F64, F32, F16, BF16, I64]"),
                Arguments.of("negativeSize", entry("F32", "[-1,4]", "[0,0]"), 0, "tensor 't'",
                        "has a negative size in its shape [-1, 4]"),
                Arguments.of("overflowingShape", entry("F32", "[4294967296,4294967296]", "[0,0]"), 0, "tensor 't'",
                        "has a shape whose element count overflows a long: [4294967296, 4294967296]"),
                Arguments.of("emptyWithOverflowingStrides",
                        entry("F32", "[0,4611686018427387904,4611686018427387904]", "[0,0]"), 0, "tensor 't'", "has a shape whose strides overflow a long (the product of its "
                        + "sizes, 0 read as 1): [0, 4611686018427387904, 4611686018427387904]"),
                Arguments.of("overflowingBytes", entry("F64", "[4611686018427387904]", "[0,0]"), 0, "tensor 't'",
                        "has a shape whose byte count overflows a long"),
                Arguments.of("rankTooHigh", entry("F32", "[" + "1,".repeat(16) + "1]", "[0,4]"), 4,
                        "tensor 't'.shape", "must hold at most 16 integers, got 17"),
                Arguments.of("shapeNotIntegers", entry("F32", "[1.5]", "[0,4]"), 4, "tensor 't'.shape",
                        "must be an array of integers, got 1.5 at index 0"),
                Arguments.of("threeOffsets", entry("F32", "[1]", "[0,4,8]"), 8, "tensor 't'.data_offsets",
                        "must hold at most 2 integers, got 3"),
                Arguments.of("oneOffset", entry("F32", "[1]", "[4]"), 4, "tensor 't'",
                        "must have data_offsets [begin, end], got 1 numbers"),
                Arguments.of("endBeforeBegin", entry("F32", "[1]", "[4,0]"), 4, "tensor 't'",
                        "has data_offsets [4, 0]; they must be [begin, end] with 0 <= begin <= end"),
                Arguments.of("pastTheData", entry("F32", "[256]", "[0,1024]"), 4, "tensor 't'",
                        "has data_offsets [0, 1024] past the 4 bytes of data: the file is truncated"),
                Arguments.of("shortRecord", entry("F32", "[128]", "[0,4]"), 4, "tensor 't'",
                        "has 4 bytes of data, but its shape [128] of F32 needs 512"),
                Arguments.of("startsLate", entry("F32", "[1]", "[4,8]"), 8, "tensor 't'",
                        "must start at data offset 0 (tensors tile the data in header order, without gap or "
                                + "overlap), got 4"),
                Arguments.of("trailingBytes", entry("F32", "[1]", "[0,4]"), 260, "the data",
                        "must be exactly the tensors' 4 bytes, got 260 (the file is truncated or has bytes no "
                                + "tensor claims)"),
                Arguments.of("overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                        + "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "tensor 'b'",
                        "must start at data offset 8 (tensors tile the data in header order, without gap or "
                                + "overlap), got 4"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badHeaders")
    void badHeader_isRefused_beforeAnyTensorIsMade(String name, String header, int dataBytes, String entry,
                                                   String rule) throws IOException {
        Path file = file(header, new byte[dataBytes]);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            FormatException e = assertThrows(FormatException.class, () -> Safetensors.readHeader(ch));
            assertEquals(entry, e.entry(), e.getMessage());
            assertEquals(rule, e.rule());
        }
    }

    static Stream<Arguments> badFiles() {
        byte[] longLength = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40).array();
        byte[] truncatedHeader = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(100).array();
        byte[] notUtf8 = ByteBuffer.allocate(10).order(ByteOrder.LITTLE_ENDIAN).putLong(2).put((byte) 0xc3)
                .put((byte) 0x28).array();
        return Stream.of(
                Arguments.of("empty", new byte[0], "the file", "has 0 bytes, fewer than the 8 of a safetensors header "
                        + "length"),
                Arguments.of("hugeLength", longLength, "the header length", "must be in [2, 16777216], got "
                        + "1099511627776 (not a safetensors file)"),
                Arguments.of("truncatedHeader", truncatedHeader, "the header", "needs 100 bytes and the file has 8 "
                        + "after the length: the file is truncated"),
                Arguments.of("notUtf8", notUtf8, "the header", "is not valid UTF-8"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badFiles")
    void badFile_isRefused(String name, byte[] bytes, String entry, String rule) throws IOException {
        Path file = Files.write(dir.resolve(name), bytes);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            FormatException e = assertThrows(FormatException.class, () -> Safetensors.readHeader(ch));
            assertEquals(entry, e.entry());
            assertEquals(rule, e.rule());
        }
    }

    @Test
    void everyByteFlipped_isRefused() throws IOException {
        Path good = dir.resolve("good.safetensors");
        try (FileChannel ch = FileChannel.open(good, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            Safetensors.write(ch, Map.of("format", "test"), Map.of("w", torch.randn(3, 3)), TensorBytes.TORCH);
        }
        byte[] bytes = Files.readAllBytes(good);
        for (int position = 0; position < bytes.length; position++) {
            byte[] flipped = bytes.clone();
            flipped[position] ^= 0x10;
            Path file = Files.write(dir.resolve("flipped"), flipped);
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                int at = position;
                assertThrows(FormatException.class, () -> Safetensors.readTensors(ch, Safetensors.readHeader(ch), TensorBytes.TORCH),
                        () -> "a flip at byte " + at + " was read");
            }
        }
    }

    @Test
    void missingOrMalformedDigest_isRefused() throws IOException {
        Path file = file(entry("F32", "[1]", "[0,4]"), new byte[4]);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            FormatException e = assertThrows(FormatException.class,
                    () -> Safetensors.readTensors(ch, Safetensors.readHeader(ch), TensorBytes.TORCH));
            assertEquals("__metadata__.sha256", e.entry());
            assertEquals("must be 64 lowercase hex digits, got none", e.rule());
        }
    }
}
