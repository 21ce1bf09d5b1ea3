package dev.muon.state;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * A test tool that writes pickle opcodes one by one and packs records into a {@code torch.save} zip: the files a
 * hostile or broken writer could produce, which no real writer would.
 */
public final class PickleBytes {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    /** A pickle that starts with {@code PROTO 2}. */
    public static PickleBytes protocol2() {
        return new PickleBytes().op(0x80).op(2);
    }

    public PickleBytes op(int... bytes) {
        for (int b : bytes) {
            out.write(b);
        }
        return this;
    }

    public PickleBytes string(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        op('X');
        out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(utf8.length).array());
        out.writeBytes(utf8);
        return this;
    }

    public PickleBytes integer(long v) {
        op(0x8a, 8);
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
        return this;
    }

    /** {@code BINFLOAT}: a big-endian double. */
    public PickleBytes number(double v) {
        op('G');
        out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.BIG_ENDIAN).putDouble(v).array());
        return this;
    }

    public PickleBytes global(String module, String name) {
        op('c');
        out.writeBytes((module + "\n" + name + "\n").getBytes(StandardCharsets.US_ASCII));
        return this;
    }

    /** A tuple of ints. */
    public PickleBytes ints(long... values) {
        op('(');
        for (long v : values) {
            integer(v);
        }
        return op('t');
    }

    /**
     * {@code _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False,
     * OrderedDict())}.
     */
    public PickleBytes tensor(String storageType, String key, long numel, long offset, long[] size, long[] stride) {
        global("torch._utils", "_rebuild_tensor_v2");
        op('(', '(');
        string("storage");
        global("torch", storageType);
        string(key);
        string("cpu");
        integer(numel);
        op('t', 'Q');
        integer(offset);
        ints(size);
        ints(stride);
        op(0x89);
        global("collections", "OrderedDict");
        op(')', 'R', 't', 'R');
        return this;
    }

    /** The bytes so far, without a {@code STOP}. */
    public byte[] bytes() {
        return out.toByteArray();
    }

    /** {@code STOP}. */
    public byte[] stop() {
        op('.');
        return out.toByteArray();
    }

    /** A {@code torch.save} zip of {@code archive/data.pkl} and the given records (name under the archive). */
    public static Path zip(Path file, byte[] pickle, Map<String, byte[]> records) {
        try (ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(file))) {
            stored(zip, "archive/data.pkl", pickle);
            for (Map.Entry<String, byte[]> e : records.entrySet()) {
                stored(zip, "archive/" + e.getKey(), e.getValue());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    static void stored(ZipOutputStream zip, String name, byte[] data) throws IOException {
        zip.putNextEntry(storedEntry(name, data));
        zip.write(data);
        zip.closeEntry();
    }

    /** A zip entry that stores {@code data} uncompressed, as {@code torch.save} does: its sizes and CRC set. */
    static ZipEntry storedEntry(String name, byte[] data) {
        ZipEntry entry = new ZipEntry(name);
        entry.setMethod(ZipEntry.STORED);
        entry.setSize(data.length);
        entry.setCompressedSize(data.length);
        CRC32 crc = new CRC32();
        crc.update(data);
        entry.setCrc(crc.getValue());
        return entry;
    }
}
