package dev.muon;

import dev.muon.internal.Messages;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.pytorch.ByteVector;
import org.bytedeco.pytorch.GenericDict;
import org.bytedeco.pytorch.GenericDictIterator;
import org.bytedeco.pytorch.GenericList;
import org.bytedeco.pytorch.IValue;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TupleElements;
import org.bytedeco.pytorch.global.torch;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Python's {@code torch.save} file format for a tree of plain values: a zip holding {@code archive/data.pkl} (a
 * pickle, protocol 2) and one {@code archive/data/<key>} record per tensor, which Python's {@code torch.load}
 * (1.6 and later) and libtorch's {@code torch::pickle_load} read.
 *
 * <p>Writing is done here in Java because the bindings cannot build a {@code c10::Dict} (no constructor, no
 * insert), so {@code torch::pickle_save} cannot be handed a dict. Reading goes through libtorch's
 * {@code pickle_load}, which also reads files written by Python, and turns its {@code IValue} tree back into
 * Java values.
 *
 * <p>Values: {@link Map} (a dict; insertion order kept), {@link List} (a list), {@link Tuple} (a tuple),
 * {@link String}, {@link Long} or {@link Integer} (an int), {@link Double} (a float), {@link Boolean}, null (None)
 * and {@link Tensor} (written from a contiguous CPU copy).
 */
final class TorchPickle {
    /** The version record libtorch's writer puts in a pickle archive; Python 1.13 reads versions 1 to 10. */
    private static final String FILE_FORMAT_VERSION = "3\n";
    private static final String ROOT = "archive/";
    /** The file is built, and read, as one Java array. */
    static final long MAX_BYTES = Integer.MAX_VALUE - 64;

    private TorchPickle() {
    }

    /**
     * A Python tuple.
     *
     * @param items the elements
     */
    record Tuple(List<Object> items) {
        Tuple {
            items = List.copyOf(items);
        }

        static Tuple of(Object... items) {
            return new Tuple(List.of(items));
        }
    }

    /**
     * The bytes of a {@code torch.save} file holding {@code root}.
     *
     * @throws IllegalArgumentException if the tree holds a value of another type, or a tensor of a dtype Python
     *                                  has no storage class for here
     * @throws IllegalStateException    if the tensors exceed {@link #MAX_BYTES}
     */
    static byte[] write(Object root) {
        return write(root, MAX_BYTES);
    }

    /** {@link #write(Object)} with another limit on the tensors' bytes (tests use a small one). */
    static byte[] write(Object root, long maxBytes) {
        Pickler pickler = new Pickler(maxBytes);
        pickler.out.write(0x80);
        pickler.out.write(2);
        pickler.value(root);
        pickler.out.write('.');
        try {
            ByteArrayOutputStream zip = new ByteArrayOutputStream();
            try (ZipOutputStream z = new ZipOutputStream(zip)) {
                stored(z, ROOT + "data.pkl", pickler.out.toByteArray());
                stored(z, ROOT + "byteorder", "little".getBytes(StandardCharsets.US_ASCII));
                for (int key = 0; key < pickler.tensors.size(); key++) {
                    stored(z, ROOT + "data/" + key, pickler.tensors.get(key));
                }
                stored(z, ROOT + "version", FILE_FORMAT_VERSION.getBytes(StandardCharsets.US_ASCII));
            }
            return zip.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot build the torch.save zip in memory", e);
        }
    }

    /** An uncompressed entry: libtorch's reader and Python's map records in place and take no deflate. */
    private static void stored(ZipOutputStream z, String name, byte[] data) throws IOException {
        ZipEntry entry = new ZipEntry(name);
        entry.setMethod(ZipEntry.STORED);
        entry.setSize(data.length);
        entry.setCompressedSize(data.length);
        CRC32 crc = new CRC32();
        crc.update(data);
        entry.setCrc(crc.getValue());
        z.putNextEntry(entry);
        z.write(data);
        z.closeEntry();
    }

    /**
     * Reads a {@code torch.save} file into Java values (dicts as {@link LinkedHashMap}, lists as {@link ArrayList},
     * ints as {@link Long}, floats as {@link Double}); the tensors belong to the caller's {@code PointerScope}.
     *
     * @throws IllegalStateException if libtorch cannot parse the bytes, or they hold a value other than those above
     */
    static Object read(byte[] bytes) {
        IValue root;
        try {
            root = torch.pickle_load(new ByteVector(bytes));
        } catch (RuntimeException e) {
            throw new IllegalStateException("not a file torch.load can read (" + Messages.firstLine(e) + ")", e);
        }
        return toJava(root);
    }

    private static Object toJava(IValue v) {
        if (v.isNone()) {
            return null;
        }
        if (v.isBool()) {
            return v.toBool();
        }
        if (v.isInt()) {
            return v.toInt();
        }
        if (v.isDouble()) {
            return v.toDouble();
        }
        if (v.isString()) {
            return v.toStringRef().getString(StandardCharsets.UTF_8);
        }
        if (v.isTensor()) {
            return v.toTensor();
        }
        if (v.isTuple()) {
            TupleElements elements = v.toTupleRef().elements();
            List<Object> items = new ArrayList<>();
            for (long i = 0; i < elements.size(); i++) {
                items.add(toJava(elements.get(i)));
            }
            return new Tuple(items);
        }
        if (v.isList()) {
            GenericList list = v.toList();
            List<Object> items = new ArrayList<>();
            for (long i = 0; i < list.size(); i++) {
                items.add(toJava(list.get(i)));
            }
            return items;
        }
        if (v.isGenericDict()) {
            GenericDict dict = v.toGenericDict();
            Map<Object, Object> map = new LinkedHashMap<>();
            GenericDictIterator end = dict.end();
            for (GenericDictIterator it = dict.begin(); it.notEquals(end); it.increment()) {
                map.put(toJava(it.access().key()), toJava(it.access().value()));
            }
            return map;
        }
        throw new IllegalStateException("holds a value of type " + v.tagKind().getString()
                + ", which a state dict does not contain");
    }

    /** Protocol 2 opcodes, written without a memo (each value once, nothing shared). */
    private static final class Pickler {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final List<byte[]> tensors = new ArrayList<>();
        private final long maxBytes;
        private long total;

        Pickler(long maxBytes) {
            this.maxBytes = maxBytes;
        }

        void value(Object v) {
            if (v == null) {
                out.write('N');
            } else if (v instanceof Boolean b) {
                out.write(b ? 0x88 : 0x89);
            } else if (v instanceof Integer i) {
                integer(i);
            } else if (v instanceof Long l) {
                integer(l);
            } else if (v instanceof Double d) {
                out.write('G');
                out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.BIG_ENDIAN).putDouble(d).array());
            } else if (v instanceof String s) {
                string(s);
            } else if (v instanceof Tuple t) {
                tuple(t.items());
            } else if (v instanceof List<?> list) {
                out.write(']');
                for (Object item : list) {
                    value(item);
                    out.write('a');
                }
            } else if (v instanceof Map<?, ?> map) {
                out.write('}');
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    value(e.getKey());
                    value(e.getValue());
                    out.write('s');
                }
            } else if (v instanceof Tensor t) {
                tensor(t);
            } else {
                throw new IllegalArgumentException("a torch.save file cannot hold a " + v.getClass().getName());
            }
        }

        private void integer(long v) {
            if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
                out.write('J');
                out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) v).array());
            } else {
                // LONG1: little-endian two's complement; 8 bytes hold every long.
                out.write(0x8a);
                out.write(8);
                out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
            }
        }

        private void string(String s) {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            out.write('X');
            out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(utf8.length).array());
            out.writeBytes(utf8);
        }

        private void tuple(List<?> items) {
            out.write('(');
            for (Object item : items) {
                value(item);
            }
            out.write('t');
        }

        private void global(String module, String name) {
            out.write('c');
            out.writeBytes((module + "\n" + name + "\n").getBytes(StandardCharsets.US_ASCII));
        }

        /**
         * {@code torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict())}, the storage a
         * persistent id {@code ('storage', torch.<Type>Storage, key, 'cpu', numel)}, as Python's
         * {@code torch.save} writes them.
         */
        private void tensor(Tensor t) {
            Tensor c = t.detach().cpu().contiguous();
            String storage = storageClass(c);
            long numel = c.numel();
            total += c.nbytes();
            if (total > maxBytes) {
                throw new IllegalStateException("the state's tensors exceed " + maxBytes + " bytes, the most this "
                        + "torch.save writer holds in memory");
            }
            byte[] data = new byte[(int) c.nbytes()];
            if (data.length > 0) {
                new BytePointer(c.data_ptr()).capacity(data.length).get(data);
            }
            String key = Integer.toString(tensors.size());
            tensors.add(data);
            global("torch._utils", "_rebuild_tensor_v2");
            out.write('(');
            out.write('(');
            string("storage");
            global("torch", storage);
            string(key);
            string("cpu");
            integer(numel);
            out.write('t');
            out.write('Q');
            integer(0);
            long[] shape = c.shape();
            long[] stride = new long[shape.length];
            long s = 1;
            for (int d = shape.length - 1; d >= 0; d--) {
                stride[d] = s;
                s *= shape[d];
            }
            List<Object> sizes = new ArrayList<>();
            List<Object> strides = new ArrayList<>();
            for (int d = 0; d < shape.length; d++) {
                sizes.add(shape[d]);
                strides.add(stride[d]);
            }
            tuple(sizes);
            tuple(strides);
            out.write(0x89);
            global("collections", "OrderedDict");
            out.write(')');
            out.write('R');
            out.write('t');
            out.write('R');
        }

        private static String storageClass(Tensor t) {
            String dtype = t.scalar_type().toString();
            return switch (dtype) {
                case "Float" -> "FloatStorage";
                case "Double" -> "DoubleStorage";
                case "BFloat16" -> "BFloat16Storage";
                case "Half" -> "HalfStorage";
                case "Long" -> "LongStorage";
                case "Int" -> "IntStorage";
                default -> throw new IllegalArgumentException("a tensor of dtype " + dtype
                        + " cannot be written to a torch.save file here");
            };
        }
    }
}
