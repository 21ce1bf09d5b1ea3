package dev.muon.state;

import dev.muon.internal.Messages;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The safetensors file layout (Hugging Face's data-only tensor format, readable from Python with the
 * {@code safetensors} package): an 8-byte little-endian header length {@code N}, {@code N} bytes of a JSON header,
 * then the tensors' bytes, little-endian and row-major, one after the other:
 * <pre>
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}, ...}
 * </pre>
 * with offsets relative to the end of the header, the tensors covering the data without gap or overlap in
 * header order, and the header padded with spaces to a multiple of 8 bytes.
 *
 * <p>muon-core adds a SHA-256 in the metadata ({@link #DIGEST_KEY}) of the whole file with that value's 64 hex
 * digits read as zeros: a reader verifies it after reading every tensor and before any is used.
 *
 * <p>Reading checks everything before a module's tensors see a byte: the header length against the file and
 * {@link #MAX_HEADER_BYTES}, the JSON ({@link Json}, bounded), each entry's keys, dtype (the kinds of
 * {@link TensorKind}), shape (sizes {@code >= 0}, rank at most {@link #MAX_RANK}, element count without
 * overflow), and offsets (the element count times the element size, tiling the data exactly). Tensors are then
 * new tensors of the reading module ({@link TensorIo}: libtorch's, or {@link RawTensor}s that muon-djl turns into
 * DJL arrays) filled from the file's bytes, never views of foreign memory. Loads no libtorch class itself.
 *
 * <p>Not API (see this package).
 */
final class Safetensors {
    /** The header bound here: 16 MiB describes some 100,000 tensors (Hugging Face's reader allows 100 MB, which as Java objects could exhaust a 2 GB heap). */
    public static final long MAX_HEADER_BYTES = 16L << 20;
    /** The most tensors a file may hold here. */
    public static final int MAX_TENSORS = 1 << 20;
    /** The highest rank read: libtorch allows 64, muon-core's state has at most 4. */
    public static final int MAX_RANK = 16;
    /** The metadata key of muon-core's SHA-256. */
    public static final String DIGEST_KEY = "sha256";
    private static final String METADATA = "__metadata__";
    private static final byte[] ZERO_DIGEST = "0".repeat(64).getBytes(StandardCharsets.US_ASCII);

    private Safetensors() {
    }

    /**
     * One tensor's header entry.
     *
     * @param name  its name
     * @param kind  its element type
     * @param shape its sizes
     * @param begin the offset of its first byte in the data
     * @param end   the offset after its last byte
     */
    public record Entry(String name, TensorKind kind, long[] shape, long begin, long end) {
        /** Copies the shape. */
        public Entry {
            shape = shape.clone();
        }

        @Override
        public long[] shape() {
            return shape.clone();
        }
    }

    /**
     * A checked header.
     *
     * @param metadata  the metadata, in file order
     * @param entries   the tensors, in file order (which is data order)
     * @param dataStart the file offset of the data
     */
    public record Header(Map<String, String> metadata, List<Entry> entries, long dataStart) {
        /** Copies. */
        public Header {
            metadata = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
            entries = List.copyOf(entries);
        }
    }

    /**
     * The format name and version a file of ours records in its metadata ({@code format}, {@code format_version}),
     * and how its reader refuses a file of another.
     *
     * @param format      the format's name
     * @param version     the one version written and read
     * @param kind        what a file of the format is, as a refusal names it ({@code a Muon checkpoint})
     * @param versionNote what a refusal of another version adds, or {@code ""}
     */
    record Stamp(String format, String version, String kind, String versionNote) {
        /**
         * New metadata holding the stamp, for a writer to add its own keys to.
         *
         * @return {@code format} and {@code format_version}, in that order
         */
        Map<String, String> metadata() {
            Map<String, String> metadata = new LinkedHashMap<>();
            metadata.put("format", format);
            metadata.put("format_version", version);
            return metadata;
        }

        /**
         * Checks a read header's stamp.
         *
         * @param metadata the header's metadata
         * @throws FormatException naming the key, the rule and the value found
         */
        void check(Map<String, String> metadata) {
            if (!format.equals(metadata.get("format"))) {
                throw new FormatException(METADATA + ".format", "must be '" + format + "', got "
                        + quoted(metadata.get("format")) + " (not " + kind + ")");
            }
            if (!version.equals(metadata.get("format_version"))) {
                throw new FormatException(METADATA + ".format_version", "must be " + version + ", got "
                        + quoted(metadata.get("format_version")) + versionNote);
            }
        }

        private static String quoted(String s) {
            return s == null ? "none" : "'" + Messages.shortened(s) + "'";
        }
    }

    // ------------------------------------------------------------------ writing

    /**
     * Writes a file: the metadata (with {@link #DIGEST_KEY} added, computed over the file) and the tensors, in the
     * order given. The channel must be empty and positioned at 0.
     *
     * @param channel  where to write
     * @param metadata the metadata, without {@link #DIGEST_KEY}
     * @param tensors  the tensors by name; the names must not be {@code "__metadata__"}
     * @param io       the tensors' module ({@link TensorBytes#TORCH}, {@link RawTensor#IO})
     * @param <T>      the tensor type
     * @return the SHA-256 written, as hex
     * @throws IOException if writing fails
     */
    public static <T> String write(SeekableByteChannel channel, Map<String, String> metadata,
                                   Map<String, T> tensors, TensorIo<T> io) throws IOException {
        TensorKind.requireLittleEndian();
        Map<String, Object> header = new LinkedHashMap<>();
        Map<String, Object> meta = new LinkedHashMap<>(metadata);
        meta.put(DIGEST_KEY, new String(ZERO_DIGEST, StandardCharsets.US_ASCII));
        header.put(METADATA, meta);
        long offset = 0;
        for (Map.Entry<String, T> e : tensors.entrySet()) {
            T t = e.getValue();
            TensorKind kind = io.kind(t);
            if (kind == null) {
                throw new IllegalArgumentException("tensor '" + e.getKey() + "' has dtype " + io.dtypeText(t)
                        + ", which muon-core's files do not hold");
            }
            long[] sizes = io.shape(t);
            long bytes = TensorKind.elementCount(sizes, "tensor '" + e.getKey() + "'") * kind.bytes();
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("dtype", kind.safetensorsName());
            List<Object> shape = new ArrayList<>();
            for (long size : sizes) {
                shape.add(size);
            }
            entry.put("shape", shape);
            entry.put("data_offsets", List.of(offset, offset + bytes));
            header.put(e.getKey(), entry);
            offset += bytes;
        }
        byte[] json = Json.write(header).getBytes(StandardCharsets.UTF_8);
        int padded = (json.length + 7) / 8 * 8;
        byte[] headerBytes = Arrays.copyOf(json, padded);
        Arrays.fill(headerBytes, json.length, padded, (byte) ' ');
        int digestAt = digestPosition(headerBytes);
        MessageDigest digest = sha256();
        ByteBuffer length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(padded).flip();
        digest.update(length.duplicate());
        digest.update(headerBytes);
        writeFully(channel, length);
        writeFully(channel, ByteBuffer.wrap(headerBytes));
        for (T t : tensors.values()) {
            try {
                io.forEachChunk(t, chunk -> {
                    digest.update(chunk.duplicate());
                    try {
                        writeFully(channel, chunk);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
            } catch (UncheckedIOException e) {
                throw e.getCause();
            }
        }
        String hex = HexFormat.of().formatHex(digest.digest());
        channel.position(8L + digestAt);
        writeFully(channel, ByteBuffer.wrap(hex.getBytes(StandardCharsets.US_ASCII)));
        return hex;
    }

    /** Where the digest's placeholder value starts in the header bytes. */
    private static int digestPosition(byte[] header) {
        byte[] key = ("\"" + DIGEST_KEY + "\":\"").getBytes(StandardCharsets.US_ASCII);
        int at = indexOf(header, key, 0);
        return at + key.length;
    }

    // ------------------------------------------------------------------ reading

    /**
     * Reads and checks a file's header.
     *
     * @param channel the file
     * @return the header
     * @throws FormatException if the header breaks a rule above
     * @throws IOException     if reading fails
     */
    public static Header readHeader(FileChannel channel) throws IOException {
        TensorKind.requireLittleEndian();
        long fileSize = channel.size();
        if (fileSize < 8) {
            throw new FormatException("the file", "has " + fileSize + " bytes, fewer than the 8 of a safetensors "
                    + "header length");
        }
        ByteBuffer length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        readFully(channel, length, 0, "the header length");
        long headerBytes = length.flip().getLong();
        if (headerBytes < 2 || headerBytes > MAX_HEADER_BYTES) {
            throw new FormatException("the header length", "must be in [2, " + MAX_HEADER_BYTES + "], got "
                    + headerBytes + " (not a safetensors file)");
        }
        if (headerBytes > fileSize - 8) {
            throw new FormatException("the header", "needs " + headerBytes + " bytes and the file has "
                    + (fileSize - 8) + " after the length: the file is truncated");
        }
        ByteBuffer raw = ByteBuffer.allocate((int) headerBytes);
        readFully(channel, raw, 8, "the header");
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().decode(raw.flip()).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new FormatException("the header", "is not valid UTF-8");
        }
        if (!(Json.parse(text, "the header") instanceof Map<?, ?> root)) {
            throw new FormatException("the header", "must be a JSON object");
        }
        long dataStart = 8 + headerBytes;
        long dataBytes = fileSize - dataStart;
        Map<String, String> metadata = new LinkedHashMap<>();
        List<Entry> entries = new ArrayList<>();
        long expectedBegin = 0;
        for (Map.Entry<?, ?> e : root.entrySet()) {
            String name = (String) e.getKey();
            if (name.equals(METADATA)) {
                metadata = metadata(e.getValue());
                continue;
            }
            if (entries.size() == MAX_TENSORS) {
                throw new FormatException("the header", "holds more than " + MAX_TENSORS + " tensors");
            }
            Entry entry = entry(name, e.getValue(), dataBytes);
            if (entry.begin() != expectedBegin) {
                throw new FormatException(quoted(name), "must start at data offset " + expectedBegin
                        + " (tensors tile the data in header order, without gap or overlap), got " + entry.begin());
            }
            expectedBegin = entry.end();
            entries.add(entry);
        }
        if (expectedBegin != dataBytes) {
            throw new FormatException("the data", "must be exactly the tensors' " + expectedBegin + " bytes, got "
                    + dataBytes + " (the file is truncated or has bytes no tensor claims)");
        }
        return new Header(metadata, entries, dataStart);
    }

    private static Map<String, String> metadata(Object value) {
        if (!(value instanceof Map<?, ?> map)) {
            throw new FormatException(METADATA, "must be an object of strings");
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            if (!(e.getValue() instanceof String s)) {
                throw new FormatException(METADATA + "." + Messages.shortened((String) e.getKey()),
                        "must be a string");
            }
            out.put((String) e.getKey(), s);
        }
        return out;
    }

    private static Entry entry(String name, Object value, long dataBytes) {
        String where = quoted(name);
        if (!(value instanceof Map<?, ?> map) || map.size() != 3 || !map.containsKey("dtype")
                || !map.containsKey("shape") || !map.containsKey("data_offsets")) {
            throw new FormatException(where, "must be an object of exactly dtype, shape and data_offsets");
        }
        Object dtype = map.get("dtype");
        TensorKind kind = dtype instanceof String s ? TensorKind.ofSafetensorsName(s) : null;
        if (kind == null) {
            throw new FormatException(where, "has dtype " + show(dtype) + "; muon-core reads "
                    + TensorKind.safetensorsNames());
        }
        long[] shape = longs(map.get("shape"), where + ".shape", MAX_RANK);
        long count = TensorKind.elementCount(shape, where);
        long[] offsets = longs(map.get("data_offsets"), where + ".data_offsets", 2);
        if (offsets.length != 2) {
            throw new FormatException(where, "must have data_offsets [begin, end], got " + offsets.length
                    + " numbers");
        }
        long bytes;
        try {
            bytes = Math.multiplyExact(count, kind.bytes());
        } catch (ArithmeticException e) {
            throw new FormatException(where, "has a shape whose byte count overflows a long");
        }
        if (offsets[0] < 0 || offsets[1] < offsets[0]) {
            throw new FormatException(where, "has data_offsets " + Arrays.toString(offsets) + "; they must be "
                    + "[begin, end] with 0 <= begin <= end");
        }
        if (offsets[1] > dataBytes) {
            throw new FormatException(where, "has data_offsets " + Arrays.toString(offsets) + " past the "
                    + dataBytes + " bytes of data: the file is truncated");
        }
        if (offsets[1] - offsets[0] != bytes) {
            throw new FormatException(where, "has " + (offsets[1] - offsets[0]) + " bytes of data, but its shape "
                    + Arrays.toString(shape) + " of " + kind.safetensorsName() + " needs " + bytes);
        }
        return new Entry(name, kind, shape, offsets[0], offsets[1]);
    }

    private static long[] longs(Object value, String where, int max) {
        if (!(value instanceof List<?> list)) {
            throw new FormatException(where, "must be an array of integers");
        }
        if (list.size() > max) {
            throw new FormatException(where, "must hold at most " + max + " integers, got " + list.size());
        }
        long[] out = new long[list.size()];
        for (int i = 0; i < out.length; i++) {
            if (!(list.get(i) instanceof Long l)) {
                throw new FormatException(where, "must be an array of integers, got " + show(list.get(i))
                        + " at index " + i);
            }
            out[i] = l;
        }
        return out;
    }

    /**
     * Reads every tensor of a checked header, in file order, into new tensors, and verifies the file's SHA-256
     * against {@link #DIGEST_KEY} before returning any.
     *
     * @param channel the file
     * @param header  its header, from {@link #readHeader}
     * @param io      the module that makes the tensors ({@link TensorBytes#TORCH}, {@link RawTensor#IO})
     * @param <T>     the tensor type
     * @return the tensors by name, in file order (libtorch's belong to the caller's scope)
     * @throws FormatException if the metadata has no valid digest, or the bytes do not match it
     * @throws IOException     if reading fails
     */
    public static <T> Map<String, T> readTensors(FileChannel channel, Header header, TensorIo<T> io)
            throws IOException {
        String stored = header.metadata().get(DIGEST_KEY);
        if (stored == null || !stored.matches("[0-9a-f]{64}")) {
            throw new FormatException(METADATA + "." + DIGEST_KEY, "must be 64 lowercase hex digits, got "
                    + (stored == null ? "none" : "'" + Messages.shortened(stored) + "'"));
        }
        MessageDigest digest = sha256();
        ByteBuffer all = ByteBuffer.allocate((int) (header.dataStart()));
        readFully(channel, all, 0, "the header");
        byte[] prefix = all.array();
        byte[] value = stored.getBytes(StandardCharsets.US_ASCII);
        int at = indexOf(prefix, ("\"" + DIGEST_KEY + "\":\"" + stored + "\"").getBytes(StandardCharsets.US_ASCII),
                8);
        if (at < 0) {
            throw new FormatException(METADATA + "." + DIGEST_KEY, "must be written as \"" + DIGEST_KEY
                    + "\":\"<hex>\" without spaces, as muon-core writes it");
        }
        int valueAt = at + DIGEST_KEY.length() + 4;
        System.arraycopy(ZERO_DIGEST, 0, prefix, valueAt, ZERO_DIGEST.length);
        digest.update(prefix);
        Map<String, T> tensors = new LinkedHashMap<>();
        long[] position = {header.dataStart()};
        for (Entry e : header.entries()) {
            T t;
            try {
                t = io.filled(e.kind(), e.shape(), chunk -> {
                    int start = chunk.position();
                    try {
                        readFully(channel, chunk, position[0], quoted(e.name()));
                    } catch (IOException failed) {
                        throw new UncheckedIOException(failed);
                    }
                    position[0] += chunk.position() - start;
                    digest.update(chunk.flip());
                });
            } catch (UncheckedIOException failed) {
                throw failed.getCause();
            }
            tensors.put(e.name(), t);
        }
        String actual = HexFormat.of().formatHex(digest.digest());
        if (!actual.equals(new String(value, StandardCharsets.US_ASCII))) {
            throw new FormatException("the file", "does not match its SHA-256 (stored " + stored + ", computed "
                    + actual + "): it is corrupt");
        }
        return tensors;
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position, String what)
            throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, at);
            if (n < 0) {
                throw new FormatException(what, "ends early: the file is truncated");
            }
            at += n;
        }
    }

    private static void writeFully(SeekableByteChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    private static int indexOf(byte[] haystack, byte[] needle, int from) {
        outer:
        for (int i = from; i <= haystack.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256", e);
        }
    }

    private static String quoted(String name) {
        return "tensor '" + Messages.shortened(name) + "'";
    }

    private static String show(Object value) {
        return value instanceof String s ? "'" + Messages.shortened(s) + "'" : String.valueOf(
                value instanceof Map || value instanceof List ? "a JSON " + (value instanceof Map ? "object" : "array")
                        : value);
    }
}
