package dev.muon.state;

import org.bytedeco.pytorch.Tensor;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Writes a tree of plain values as Python's {@code torch.save} does (the zip layout of PyTorch 1.6 and later), so
 * that {@code torch.load(f, weights_only=True)} reads it: {@code archive/data.pkl}, a protocol-2 pickle that uses
 * only what {@link WeightsOnlyUnpickler} and PyTorch's weights-only reader allow, and one uncompressed record
 * {@code archive/data/<key>} per tensor, streamed from the tensor's memory.
 *
 * <p>Values: {@link Map} (a dict; insertion order kept), {@link List} (a list), {@link PickleValues.Tuple},
 * {@link String}, {@link Long} or {@link Integer} (an int), {@link Double} (a float), {@link Boolean}, null (None)
 * and {@link Tensor} (written as a contiguous CPU copy of the kinds of {@link TensorKind}).
 *
 * <p>Written in Java because the bindings cannot build the {@code c10::Dict} that {@code torch::pickle_save}
 * would need. Not API (see this package).
 */
final class TorchSave {
    /** The version record of the archive; PyTorch 1.13 reads versions 1 to 10. */
    private static final String FILE_FORMAT_VERSION = "3\n";
    private static final String ROOT = "archive/";
    /**
     * Every entry's last-modified time, so that one state gives the same bytes whenever it is written (the JDK
     * would stamp the clock, in 2-second steps). PyTorch's own writer stamps a fixed 0 (1980-00-00 00:00), a date
     * the JDK cannot write; this is the reproducible-builds constant Gradle uses, a DOS date-time of local fields
     * (no time zone enters) written without an extended-timestamp field. Readers take any time.
     */
    static final LocalDateTime ENTRY_TIME = LocalDateTime.of(1980, 2, 1, 0, 0);

    private final ByteArrayOutputStream pickle = new ByteArrayOutputStream();
    private final List<Tensor> tensors = new ArrayList<>();

    private TorchSave() {
    }

    /**
     * Writes {@code root} to {@code out}.
     *
     * @param root the value
     * @param out  where the zip goes (not closed)
     * @throws IllegalArgumentException if the tree holds a value of another type or a tensor of another dtype
     * @throws IOException              if writing fails
     */
    public static void write(Object root, OutputStream out) throws IOException {
        TensorKind.requireLittleEndian();
        TorchSave save = new TorchSave();
        save.pickle.write(0x80);
        save.pickle.write(2);
        save.value(root);
        save.pickle.write('.');
        ZipOutputStream zip = new ZipOutputStream(out);
        byte[] pkl = save.pickle.toByteArray();
        stored(zip, ROOT + "data.pkl", List.of(ByteBuffer.wrap(pkl)), pkl.length);
        stored(zip, ROOT + "byteorder", List.of(ByteBuffer.wrap("little".getBytes(StandardCharsets.US_ASCII))), 6);
        for (int key = 0; key < save.tensors.size(); key++) {
            Tensor t = save.tensors.get(key);
            List<ByteBuffer> chunks = new ArrayList<>();
            TensorBytes.forEachChunk(t, chunks::add);
            stored(zip, ROOT + "data/" + key, chunks, t.numel() * t.element_size());
        }
        byte[] version = FILE_FORMAT_VERSION.getBytes(StandardCharsets.US_ASCII);
        stored(zip, ROOT + "version", List.of(ByteBuffer.wrap(version)), version.length);
        zip.finish();
    }

    /** An uncompressed record: PyTorch's readers map records in place and take no deflate. */
    private static void stored(ZipOutputStream zip, String name, List<ByteBuffer> chunks, long size)
            throws IOException {
        CRC32 crc = new CRC32();
        chunks.forEach(c -> crc.update(c.duplicate()));
        ZipEntry entry = new ZipEntry(name);
        entry.setMethod(ZipEntry.STORED);
        entry.setSize(size);
        entry.setCompressedSize(size);
        entry.setCrc(crc.getValue());
        entry.setTimeLocal(ENTRY_TIME);
        zip.putNextEntry(entry);
        byte[] buffer = new byte[1 << 20];
        for (ByteBuffer chunk : chunks) {
            ByteBuffer c = chunk.duplicate();
            while (c.hasRemaining()) {
                int n = Math.min(buffer.length, c.remaining());
                c.get(buffer, 0, n);
                zip.write(buffer, 0, n);
            }
        }
        zip.closeEntry();
    }

    private void value(Object v) {
        if (v == null) {
            pickle.write('N');
        } else if (v instanceof Boolean b) {
            pickle.write(b ? 0x88 : 0x89);
        } else if (v instanceof Integer i) {
            integer(i);
        } else if (v instanceof Long l) {
            integer(l);
        } else if (v instanceof Double d) {
            pickle.write('G');
            pickle.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.BIG_ENDIAN).putDouble(d).array());
        } else if (v instanceof String s) {
            string(s);
        } else if (v instanceof PickleValues.Tuple t) {
            tuple(t.items());
        } else if (v instanceof List<?> list) {
            pickle.write(']');
            for (Object item : list) {
                value(item);
                pickle.write('a');
            }
        } else if (v instanceof Map<?, ?> map) {
            pickle.write('}');
            for (Map.Entry<?, ?> e : map.entrySet()) {
                value(e.getKey());
                value(e.getValue());
                pickle.write('s');
            }
        } else if (v instanceof Tensor t) {
            tensor(t);
        } else {
            throw new IllegalArgumentException("a torch.save file cannot hold a " + v.getClass().getName());
        }
    }

    private void integer(long v) {
        if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
            pickle.write('J');
            pickle.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) v).array());
        } else {
            // LONG1: little-endian two's complement; 8 bytes hold every long.
            pickle.write(0x8a);
            pickle.write(8);
            pickle.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
        }
    }

    private void string(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        pickle.write('X');
        pickle.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(utf8.length).array());
        pickle.writeBytes(utf8);
    }

    private void tuple(List<?> items) {
        pickle.write('(');
        for (Object item : items) {
            value(item);
        }
        pickle.write('t');
    }

    private void global(String module, String name) {
        pickle.write('c');
        pickle.writeBytes((module + "\n" + name + "\n").getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * {@code torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict())}, the storage a
     * persistent id {@code ('storage', torch.<Type>Storage, key, 'cpu', numel)}, as Python's {@code torch.save}
     * writes them.
     */
    private void tensor(Tensor t) {
        TensorKind kind = TensorBytes.kindOf(t.scalar_type());
        if (kind == null) {
            throw new IllegalArgumentException("a tensor of dtype " + t.scalar_type() + " cannot be written to a "
                    + "torch.save file here");
        }
        Tensor c = t.detach().cpu().contiguous();
        String key = Integer.toString(tensors.size());
        tensors.add(c);
        global("torch._utils", "_rebuild_tensor_v2");
        pickle.write('(');
        pickle.write('(');
        string("storage");
        global("torch", kind.storageName());
        string(key);
        string("cpu");
        integer(c.numel());
        pickle.write('t');
        pickle.write('Q');
        integer(0);
        long[] shape = c.shape();
        List<Object> sizes = new ArrayList<>();
        List<Object> strides = new ArrayList<>();
        long stride = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            sizes.add(0, shape[d]);
            strides.add(0, stride);
            stride *= shape[d];
        }
        tuple(sizes);
        tuple(strides);
        pickle.write(0x89);
        global("collections", "OrderedDict");
        pickle.write(')');
        pickle.write('R');
        pickle.write('t');
        pickle.write('R');
    }
}
