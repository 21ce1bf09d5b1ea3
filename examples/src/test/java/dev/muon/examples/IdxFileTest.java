package dev.muon.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IdxFileTest {
    @TempDir
    Path dir;

    /** An IDX file of unsigned bytes with the given header fields, for tests here and next door. */
    static byte[] idx(int type, int[] dims, byte[] data) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeByte(0);
        out.writeByte(0);
        out.writeByte(type);
        out.writeByte(dims.length);
        for (int d : dims) {
            out.writeInt(d);
        }
        out.write(data);
        return bytes.toByteArray();
    }

    static void write(Path path, byte[] content) throws IOException {
        if (path.getFileName().toString().endsWith(".gz")) {
            try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(path))) {
                out.write(content);
            }
        } else {
            Files.write(path, content);
        }
    }

    @Test
    void read_plainFile_givesDimsAndUnsignedValues() throws IOException {
        Path file = dir.resolve("images-idx3-ubyte");
        write(file, idx(0x08, new int[] {2, 2, 3}, new byte[] {0, 1, 2, 3, 4, 5, (byte) 250, 7, 8, 9, 10, (byte) 255}));
        IdxFile idx = IdxFile.read(file);
        assertArrayEquals(new int[] {2, 2, 3}, idx.dims());
        assertEquals(2, idx.count());
        assertEquals(6, idx.itemSize());
        assertEquals(250, idx.unsigned(6));
        assertEquals(255, idx.unsigned(11));
    }

    @Test
    void read_gzipFile_isDecompressed() throws IOException {
        Path file = dir.resolve("labels-idx1-ubyte.gz");
        write(file, idx(0x08, new int[] {4}, new byte[] {9, 0, 3, 7}));
        IdxFile idx = IdxFile.read(file);
        assertEquals(4, idx.count());
        assertEquals(1, idx.itemSize());
        assertEquals(7, idx.unsigned(3));
    }

    static Stream<Arguments> badHeaders() throws IOException {
        byte[] badMagic = idx(0x08, new int[] {1}, new byte[] {1});
        badMagic[0] = 1;
        return Stream.of(
                Arguments.of("two zero bytes", badMagic),
                Arguments.of("0x08", idx(0x0D, new int[] {1}, new byte[] {1, 2, 3, 4})),
                Arguments.of("rank must be >= 1", idx(0x08, new int[] {}, new byte[] {})),
                Arguments.of("dimension 0 must be >= 0", idx(0x08, new int[] {-1}, new byte[] {})));
    }

    @ParameterizedTest
    @MethodSource("badHeaders")
    void read_badHeader_isRejected(String message, byte[] content) throws IOException {
        Path file = dir.resolve("bad-idx");
        write(file, content);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> IdxFile.read(file));
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }

    @Test
    void read_truncatedData_throwsEof() throws IOException {
        Path file = dir.resolve("short-idx");
        write(file, idx(0x08, new int[] {3, 2}, new byte[] {1, 2, 3}));
        assertThrows(EOFException.class, () -> IdxFile.read(file));
    }
}
