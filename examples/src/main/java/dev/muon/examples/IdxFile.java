package dev.muon.examples;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;

/**
 * One IDX file (the format of MNIST and Fashion-MNIST) read into memory: its dimensions and its unsigned bytes.
 *
 * <p>The format (Y. LeCun's MNIST page): two zero bytes, a type byte ({@code 0x08} = unsigned byte, the only
 * type these data sets use), a byte with the number of dimensions, then each dimension as a big-endian int, then
 * the data in row-major order. A name ending in {@code .gz} is read through gzip, as Debian ships the files.
 *
 * <pre>{@code
 * IdxFile labels = IdxFile.read(Path.of("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"));
 * int first = labels.unsigned(0);
 * }</pre>
 */
public final class IdxFile {
    private static final int UNSIGNED_BYTE = 0x08;

    private final int[] dims;
    private final byte[] data;

    private IdxFile(int[] dims, byte[] data) {
        this.dims = dims;
        this.data = data;
    }

    /**
     * Reads a whole IDX file of unsigned bytes, gzip-compressed when its name ends in {@code .gz}.
     *
     * @param path the file
     * @return its dimensions and data
     * @throws IOException              if the file cannot be read or ends early
     * @throws IllegalArgumentException if the header is not that of an unsigned-byte IDX file
     */
    public static IdxFile read(Path path) throws IOException {
        try (InputStream raw = Files.newInputStream(path);
             InputStream in = path.getFileName().toString().endsWith(".gz")
                     ? new GZIPInputStream(new BufferedInputStream(raw), 1 << 16) : new BufferedInputStream(raw);
             DataInputStream din = new DataInputStream(in)) {
            int zero1 = din.readUnsignedByte();
            int zero2 = din.readUnsignedByte();
            int type = din.readUnsignedByte();
            int rank = din.readUnsignedByte();
            if (zero1 != 0 || zero2 != 0) {
                throw new IllegalArgumentException("IDX magic must start with two zero bytes, got " + zero1 + ", "
                        + zero2 + " in " + path);
            }
            if (type != UNSIGNED_BYTE) {
                throw new IllegalArgumentException("IDX type must be 0x08 (unsigned byte), got 0x"
                        + Integer.toHexString(type) + " in " + path);
            }
            if (rank < 1) {
                throw new IllegalArgumentException("IDX rank must be >= 1, got " + rank + " in " + path);
            }
            int[] dims = new int[rank];
            long count = 1;
            for (int i = 0; i < rank; i++) {
                dims[i] = din.readInt();
                if (dims[i] < 0) {
                    throw new IllegalArgumentException("IDX dimension " + i + " must be >= 0, got " + dims[i]
                            + " in " + path);
                }
                count *= dims[i];
            }
            if (count > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("IDX file holds " + count + " bytes, more than an array can hold: "
                        + path);
            }
            byte[] data = new byte[(int) count];
            din.readFully(data);
            return new IdxFile(dims, data);
        }
    }

    /**
     * The dimensions, outermost first.
     *
     * @return a copy of the dimensions
     */
    public int[] dims() {
        return dims.clone();
    }

    /**
     * The number of items: the first dimension.
     *
     * @return the item count
     */
    public int count() {
        return dims[0];
    }

    /**
     * The bytes of one item: the product of the dimensions after the first.
     *
     * @return bytes per item
     */
    public int itemSize() {
        int size = 1;
        for (int i = 1; i < dims.length; i++) {
            size *= dims[i];
        }
        return size;
    }

    /**
     * One value, 0 to 255.
     *
     * @param index the flat index
     * @return the unsigned value
     */
    public int unsigned(int index) {
        return data[index] & 0xFF;
    }

    /** The raw bytes, not copied: for the loader next to it, which converts them in bulk. */
    byte[] bytes() {
        return data;
    }

    @Override
    public String toString() {
        return "IdxFile" + Arrays.toString(dims);
    }
}
