package dev.muon.state;

import dev.muon.internal.Messages;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;

/**
 * Reads a file of Python's {@code torch.save} (the zip layout of PyTorch 1.6 and later) without running anything
 * in it: the pickle {@code <archive>/data.pkl} through {@link WeightsOnlyUnpickler}, and each tensor from its
 * storage record {@code <archive>/data/<key>}, checked before libtorch sees a byte:
 * <ul>
 *   <li>every record read is stored uncompressed, as {@code torch.save} writes them (so no record can inflate
 *       beyond the file), and {@code data.pkl} is at most {@link #MAX_PICKLE_BYTES};</li>
 *   <li>a storage record's length is exactly its declared element count times its element size;</li>
 *   <li>a view's offset, sizes and strides (all {@code >= 0}) address only elements inside its storage, computed
 *       without overflow;</li>
 *   <li>{@code byteorder}, when present, is {@code little}.</li>
 * </ul>
 * A tensor is a new contiguous CPU tensor filled from the record's bytes (a copy of the view), never a view of
 * the file or of foreign memory.
 *
 * <p>Not API (see this package).
 */
final class TorchLoad implements AutoCloseable {
    /** The largest pickle read; a state dict's is kilobytes to a few megabytes. */
    public static final long MAX_PICKLE_BYTES = 64L << 20;
    /** The most entries a zip may hold here. */
    public static final int MAX_ENTRIES = 1 << 20;

    private final ZipFile zip;
    private final String prefix;
    private final Object root;

    private TorchLoad(ZipFile zip, String prefix, Object root) {
        this.zip = zip;
        this.prefix = prefix;
        this.root = root;
    }

    /**
     * Opens a file and reads its pickle.
     *
     * @param file the file
     * @return the open file; close it after the last {@link #tensor}
     * @throws FormatException if the file is not a well-formed {@code torch.save} zip within the bounds, or its
     *                         pickle is refused ({@link WeightsOnlyUnpickler})
     * @throws IOException     if reading fails
     */
    public static TorchLoad open(Path file) throws IOException {
        TensorKind.requireLittleEndian();
        ZipFile zip;
        try {
            zip = new ZipFile(file.toFile());
        } catch (ZipException e) {
            throw new FormatException("the file", "is not a zip archive, as torch.save writes (" + e.getMessage()
                    + ")");
        }
        try {
            String pickle = null;
            int count = 0;
            for (Enumeration<? extends ZipEntry> it = zip.entries(); it.hasMoreElements(); ) {
                ZipEntry entry = it.nextElement();
                if (++count > MAX_ENTRIES) {
                    throw new FormatException("the zip", "holds more than " + MAX_ENTRIES + " records");
                }
                String name = entry.getName();
                if (name.endsWith("/data.pkl") && name.indexOf('/') == name.length() - "/data.pkl".length()) {
                    if (pickle != null) {
                        throw new FormatException("the zip", "holds two pickles, '" + Messages.shortened(pickle)
                                + "' and '" + Messages.shortened(name) + "'");
                    }
                    pickle = name;
                }
            }
            if (pickle == null) {
                throw new FormatException("the zip", "holds no <archive>/data.pkl record, so it is not a torch.save "
                        + "file");
            }
            String prefix = pickle.substring(0, pickle.length() - "data.pkl".length());
            ZipEntry byteOrder = zip.getEntry(prefix + "byteorder");
            if (byteOrder != null) {
                byte[] order = record(zip, byteOrder, 16);
                if (!new String(order, StandardCharsets.US_ASCII).equals("little")) {
                    throw new FormatException(byteOrder.getName(), "must be 'little', got '"
                            + Messages.shortened(new String(order, StandardCharsets.US_ASCII)) + "'");
                }
            }
            Object root = WeightsOnlyUnpickler.read(record(zip, zip.getEntry(pickle), MAX_PICKLE_BYTES));
            return new TorchLoad(zip, prefix, root);
        } catch (RuntimeException | IOException e) {
            zip.close();
            throw e;
        }
    }

    /**
     * The pickle's value.
     *
     * @return maps, lists, tuples, strings, numbers, booleans, null and {@link PickleValues.TensorRef}
     */
    public Object root() {
        return root;
    }

    /**
     * The tensor a reference describes, as a new contiguous CPU tensor of the view's sizes.
     *
     * @param ref   the reference
     * @param where how to name it in a message
     * @return the tensor (it belongs to the caller's scope)
     * @throws FormatException if the storage record is missing, compressed, of another length than declared, or
     *                         the view reaches outside it
     * @throws IOException     if reading fails
     */
    public Tensor tensor(PickleValues.TensorRef ref, String where) throws IOException {
        PickleValues.StorageRef storage = ref.storage();
        long[] size = ref.size();
        long[] stride = ref.stride();
        checkView(ref.offset(), size, stride, storage.numel(), where);
        // The view's shape is made as a tensor below: an empty one can still be one libtorch cannot stride.
        TensorKind.elementCount(size, where);
        String name = prefix + "data/" + storage.key();
        ZipEntry entry = zip.getEntry(name);
        if (entry == null) {
            throw new FormatException(where, "has its storage in record '" + Messages.shortened(name)
                    + "', which the zip does not hold");
        }
        long bytes;
        try {
            bytes = Math.multiplyExact(storage.numel(), storage.kind().bytes());
        } catch (ArithmeticException e) {
            throw new FormatException(where, "declares a storage of " + storage.numel() + " elements, whose bytes "
                    + "overflow a long");
        }
        if (entry.getSize() != bytes) {
            throw new FormatException(where, "declares " + storage.numel() + " elements of "
                    + storage.kind().storageName() + " (" + bytes + " bytes), but record '"
                    + Messages.shortened(name) + "' holds " + entry.getSize() + " bytes");
        }
        requireStored(entry);
        Tensor flat;
        try (InputStream in = zip.getInputStream(entry)) {
            byte[] buffer = new byte[1 << 20];
            flat = TensorBytes.filled(storage.kind(), new long[]{storage.numel()}, chunk -> {
                try {
                    while (chunk.hasRemaining()) {
                        int n = in.read(buffer, 0, Math.min(buffer.length, chunk.remaining()));
                        if (n < 0) {
                            throw new FormatException(where, "has a storage record that ends early");
                        }
                        chunk.put(buffer, 0, n);
                    }
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
        } catch (java.io.UncheckedIOException e) {
            throw e.getCause();
        }
        if (isWholeContiguous(ref.offset(), size, stride, storage.numel())) {
            return flat.reshape(size);
        }
        // A compact copy of the view: clone() would keep the view's strides.
        Tensor view = flat.as_strided(size, stride, new org.bytedeco.pytorch.LongOptional(ref.offset()));
        return torch.empty(size, new TensorOptions(TensorBytes.scalarType(storage.kind())), null).copy_(view);
    }

    /**
     * Checks that a view addresses only elements {@code [0, numel)}: offset, sizes and strides {@code >= 0}, and
     * {@code offset + Σ (size_i − 1)·stride_i < numel} when no size is 0 ({@code offset <= numel} when one is).
     */
    static void checkView(long offset, long[] size, long[] stride, long numel, String where) {
        if (offset < 0) {
            throw new FormatException(where, "has storage offset " + offset + "; it must be >= 0");
        }
        boolean empty = false;
        for (int d = 0; d < size.length; d++) {
            if (size[d] < 0 || stride[d] < 0) {
                throw new FormatException(where, "has size " + Messages.shortened(size) + " and stride "
                        + Messages.shortened(stride) + "; both must be >= 0");
            }
            empty |= size[d] == 0;
        }
        if (empty) {
            if (offset > numel) {
                throw new FormatException(where, "has storage offset " + offset + " past its storage of " + numel
                        + " elements");
            }
            return;
        }
        long last = offset;
        try {
            for (int d = 0; d < size.length; d++) {
                last = Math.addExact(last, Math.multiplyExact(size[d] - 1, stride[d]));
            }
        } catch (ArithmeticException e) {
            throw new FormatException(where, "has a view (offset " + offset + ", size " + Messages.shortened(size)
                    + ", stride " + Messages.shortened(stride) + ") whose extent overflows a long");
        }
        if (last >= numel) {
            throw new FormatException(where, "has a view (offset " + offset + ", size " + Messages.shortened(size)
                    + ", stride " + Messages.shortened(stride) + ") that reaches element " + last + " of a storage of "
                    + numel + " elements");
        }
    }

    private static boolean isWholeContiguous(long offset, long[] size, long[] stride, long numel) {
        long expected = 1;
        for (int d = size.length - 1; d >= 0; d--) {
            if (size[d] != 1 && stride[d] != expected) {
                return false;
            }
            expected *= size[d];
        }
        return offset == 0 && expected == numel;
    }

    private static void requireStored(ZipEntry entry) {
        if (entry.getMethod() != ZipEntry.STORED || entry.getCompressedSize() != entry.getSize()) {
            throw new FormatException("record '" + Messages.shortened(entry.getName()) + "'", "is compressed; "
                    + "torch.save stores its records uncompressed, and a compressed one could inflate beyond the file");
        }
    }

    private static byte[] record(ZipFile zip, ZipEntry entry, long max) throws IOException {
        requireStored(entry);
        if (entry.getSize() < 0 || entry.getSize() > max) {
            throw new FormatException("record '" + Messages.shortened(entry.getName()) + "'", "has "
                    + entry.getSize() + " bytes; at most " + max + " are read");
        }
        byte[] bytes = new byte[(int) entry.getSize()];
        try (InputStream in = zip.getInputStream(entry)) {
            int read = in.readNBytes(bytes, 0, bytes.length);
            if (read != bytes.length) {
                throw new FormatException("record '" + Messages.shortened(entry.getName()) + "'",
                        "ends after " + read + " of its " + bytes.length + " bytes");
            }
        }
        return bytes;
    }

    /**
     * Closes the zip.
     *
     * @throws IOException if closing fails
     */
    @Override
    public void close() throws IOException {
        zip.close();
    }
}
