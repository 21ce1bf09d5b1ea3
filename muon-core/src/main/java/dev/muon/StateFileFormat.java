package dev.muon;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.UUID;
import java.util.zip.CRC32C;

/**
 * The bytes of one state file of {@link FileHome}: where every buffer's two slots lie, the headers, and the checks
 * that what is read is what this run wrote. The home decides when to read and write; this class only says how.
 *
 * <p><b>Layout.</b> {@code <directory>/muon-state-<run>-rank<r>.bin}, little-endian. A 4096-byte header: the magic
 * {@code MUONSTAT}, the format version (1), the rank, the run identity (128 random bits drawn when the optimizer is
 * built) and the number of entries. Then every buffer the process keeps, in the optimizer's parameter order and
 * each parameter's declared order, as two slots; a slot is a 4096-byte slot header (the magic {@code MUONSLOT}, the
 * run identity, the entry and slot numbers, the generation, the data's length and its CRC-32C) followed by the
 * buffer's bytes, padded to 4096.
 *
 * <p><b>Checks.</b> A slot header must carry the magic, this run's identity, the entry and slot numbers, the
 * generation, the length and the CRC-32C this run wrote there; a slot must lie inside the file; a slot's bytes must
 * match the CRC-32C. Nothing is ever read from a file this run did not make.
 */
final class StateFileFormat {
    /** The alignment of the header, the slot headers and the data. */
    static final int ALIGN = 4096;
    /** The bytes of a slot header that are written (the rest of its block is zeros). */
    static final int SLOT_HEADER = 64;
    static final int VERSION = 1;
    private static final long FILE_MAGIC = magic("MUONSTAT");
    private static final long SLOT_MAGIC = magic("MUONSLOT");

    /** Positional reads and writes of one file: the only I/O the format does. */
    interface Channel extends Closeable {
        /**
         * Reads into {@code dst} from {@code position}.
         *
         * @param dst      where to
         * @param position where from
         * @return the bytes read, -1 at the end of the file
         * @throws IOException if it fails
         */
        int read(ByteBuffer dst, long position) throws IOException;

        /**
         * Writes {@code src} at {@code position}.
         *
         * @param src      what
         * @param position where
         * @return the bytes written
         * @throws IOException if it fails
         */
        int write(ByteBuffer src, long position) throws IOException;

        /**
         * The file's length.
         *
         * @return bytes
         * @throws IOException if it cannot be read
         */
        long size() throws IOException;
    }

    /**
     * Where one buffer lies in the file: its entry number, its data's length, the dtype code its slot headers carry,
     * and the offset of its first slot (the second follows it).
     */
    record Slots(int entry, long bytes, int dtype, long first) {
        /** The offset of a slot's header; its data follows {@link #ALIGN} bytes later. */
        long offset(int slot) {
            return slot == 0 ? first : first + ALIGN + aligned(bytes);
        }

        /** The byte after a slot's data. */
        long end(int slot) {
            return offset(slot) + ALIGN + bytes;
        }
    }

    /** Lays buffers out one after another after the file header, each as two slots. */
    static final class Layout {
        private long offset = ALIGN;
        private int entries;

        /**
         * The next buffer's place.
         *
         * @param bytes its data's length
         * @param dtype the dtype code its slot headers carry
         * @return where its slots lie
         */
        Slots add(long bytes, int dtype) {
            Slots slots = new Slots(entries++, bytes, dtype, offset);
            for (int slot = 0; slot < 2; slot++) {
                offset = Math.addExact(offset, ALIGN + aligned(bytes));
            }
            return slots;
        }

        /** The file's full length once every slot laid out so far has been written. */
        long length() {
            return offset;
        }
    }

    /**
     * A slot read that is not what this run wrote. Met after a step changed parameters, the optimizer is part-way
     * and only a restore helps; met by the step's first read, {@link FileHome#bringIn} makes it a
     * StateFileException.
     */
    static final class SlotMismatch extends IllegalStateException {
        private static final long serialVersionUID = 1L;
        final String where;
        final String wrong;

        SlotMismatch(Path file, String where, String wrong) {
            super("Muon state file " + file + ": " + where + " " + wrong + "; restore a saved state (load or "
                    + "restore) to go on");
            this.where = where;
            this.wrong = wrong;
        }
    }

    private final Path file;
    private final Channel channel;
    private final long runMost;
    private final long runLeast;
    /** The slot header {@link #checkSlot} reads into; used on the I/O thread only. */
    private final ByteBuffer checked = ByteBuffer.allocate(SLOT_HEADER).order(ByteOrder.LITTLE_ENDIAN);

    /**
     * The format of one open file.
     *
     * @param file    the file, for messages
     * @param channel its reads and writes
     * @param run     the run identity its headers carry
     */
    StateFileFormat(Path file, Channel channel, UUID run) {
        this.file = file;
        this.channel = channel;
        this.runMost = run.getMostSignificantBits();
        this.runLeast = run.getLeastSignificantBits();
    }

    /** The name of a state file: it holds the run identity, so a file is never another run's. */
    static String fileName(UUID run, int rank) {
        return "muon-state-" + run.toString().replace("-", "") + "-rank" + rank + ".bin";
    }

    /**
     * Writes the file header and reads it back.
     *
     * @param rank    the process's rank
     * @param entries how many buffers the file keeps
     * @throws IOException if it cannot be written or does not read back what was written
     */
    void writeHeader(int rank, int entries) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(ALIGN).order(ByteOrder.LITTLE_ENDIAN);
        header.putLong(FILE_MAGIC).putInt(VERSION).putInt(rank).putLong(runMost).putLong(runLeast).putInt(entries);
        header.rewind();
        writeFully(channel, header.duplicate(), 0);
        ByteBuffer back = ByteBuffer.allocate(header.capacity());
        readFully(channel, back, 0);
        if (!back.flip().equals(header.rewind())) {
            throw new IOException("the file did not read back what was written");
        }
    }

    /**
     * The file's length.
     *
     * @return bytes
     * @throws IOException if it cannot be read
     */
    long size() throws IOException {
        return channel.size();
    }

    /**
     * Reads a slot into {@code chunks} and checks it: its header as this run wrote it, its bytes against the CRC.
     * Touches no libtorch object, so it runs on any thread.
     *
     * @param slots      the buffer's place
     * @param what       the buffer, for messages
     * @param slot       the slot
     * @param generation the generation this run wrote there
     * @param crc        the CRC-32C this run wrote there
     * @param chunks     where the data goes, {@link Slots#bytes} in all
     * @throws UncheckedIOException if the file cannot be read
     * @throws SlotMismatch         if the slot is not what this run wrote
     */
    void readSlot(Slots slots, String what, int slot, long generation, int crc, ByteBuffer[] chunks) {
        String where = what + " (slot " + slot + ")";
        ByteBuffer header = ByteBuffer.allocate(SLOT_HEADER).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C sum = new CRC32C();
        try {
            readFully(channel, header, slots.offset(slot));
            long position = slots.offset(slot) + ALIGN;
            for (ByteBuffer chunk : chunks) {
                int length = chunk.remaining();
                readFully(channel, chunk.duplicate(), position);
                sum.update(chunk.duplicate());
                position += length;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + where + " from Muon state file " + file + " failed (" + e
                    + ")", e);
        }
        String wrong = checkSlotHeader(header.flip(), slots, slot, generation, crc);
        if (wrong == null && (int) sum.getValue() != crc) {
            wrong = "does not match the checksum this run wrote (CRC-32C " + hex(crc) + " written, "
                    + hex((int) sum.getValue()) + " read): it was altered or damaged since";
        }
        if (wrong != null) {
            throw new SlotMismatch(file, where, wrong);
        }
    }

    /**
     * Writes a buffer into a slot: its bytes, then its header, so that the header is there only over whole data.
     *
     * @param slots      the buffer's place
     * @param slot       the slot
     * @param generation the generation to write
     * @param chunks     the data, {@link Slots#bytes} in all
     * @return the data's CRC-32C
     * @throws IOException if a write fails; the other slot is untouched
     */
    int writeSlot(Slots slots, int slot, long generation, ByteBuffer[] chunks) throws IOException {
        CRC32C sum = new CRC32C();
        for (ByteBuffer chunk : chunks) {
            sum.update(chunk.duplicate());
        }
        int crc = (int) sum.getValue();
        long position = slots.offset(slot) + ALIGN;
        for (ByteBuffer chunk : chunks) {
            int length = chunk.remaining();
            writeFully(channel, chunk.duplicate(), position);
            position += length;
        }
        ByteBuffer header = ByteBuffer.allocate(SLOT_HEADER).order(ByteOrder.LITTLE_ENDIAN);
        header.putLong(SLOT_MAGIC).putLong(runMost).putLong(runLeast).putInt(slots.entry()).putInt(slot)
                .putLong(generation).putLong(slots.bytes()).putInt(crc).putInt(slots.dtype());
        writeFully(channel, header.flip(), slots.offset(slot));
        return crc;
    }

    /**
     * What is wrong with a slot in force, or null: it lies inside the file and its header is what this run wrote.
     * Runs on the I/O thread only.
     *
     * @param slots      the buffer's place
     * @param slot       the slot in force
     * @param generation the generation this run wrote there
     * @param crc        the CRC-32C this run wrote there
     * @param size       the file's length
     * @return the rule it breaks, worded to follow the slot's name
     * @throws IOException if its header cannot be read
     */
    String checkSlot(Slots slots, int slot, long generation, int crc, long size) throws IOException {
        if (size < slots.end(slot)) {
            return "ends at byte " + slots.end(slot) + " but the file has " + size + " bytes: it was truncated "
                    + "since this run wrote it";
        }
        checked.clear();
        readFully(channel, checked, slots.offset(slot));
        return checkSlotHeader(checked.flip(), slots, slot, generation, crc);
    }

    private String checkSlotHeader(ByteBuffer header, Slots slots, int slot, long generation, int crc) {
        header.order(ByteOrder.LITTLE_ENDIAN);
        if (header.remaining() < SLOT_HEADER || header.getLong(0) != SLOT_MAGIC) {
            return "has no slot header (magic MUONSLOT) where this run wrote one: it was overwritten since";
        }
        long most = header.getLong(8);
        long least = header.getLong(16);
        if (most != runMost || least != runLeast) {
            return "holds run " + new UUID(most, least) + "'s state, not this run's (" + new UUID(runMost, runLeast)
                    + "): a state file of another run is never read";
        }
        if (header.getInt(24) != slots.entry() || header.getInt(28) != slot) {
            return "holds entry " + header.getInt(24) + " slot " + header.getInt(28) + " where this run wrote entry "
                    + slots.entry() + " slot " + slot + ": it was rearranged since";
        }
        if (header.getLong(32) != generation) {
            return "has generation " + header.getLong(32) + " where this run wrote generation " + generation
                    + ": it was replaced since";
        }
        if (header.getLong(40) != slots.bytes()) {
            return "has length " + header.getLong(40) + " where this run wrote " + slots.bytes() + " bytes";
        }
        if (header.getInt(48) != crc) {
            return "has checksum " + hex(header.getInt(48)) + " where this run wrote " + hex(crc)
                    + ": it was altered since";
        }
        return null;
    }

    private static void readFully(Channel channel, ByteBuffer dst, long position) throws IOException {
        long at = position;
        while (dst.hasRemaining()) {
            int n = channel.read(dst, at);
            if (n < 0) {
                throw new IOException("the file ends at byte " + at + ", before the " + dst.remaining()
                        + " bytes still to read");
            }
            at += n;
        }
    }

    private static void writeFully(Channel channel, ByteBuffer src, long position) throws IOException {
        long at = position;
        while (src.hasRemaining()) {
            at += channel.write(src, at);
        }
    }

    private static long aligned(long bytes) {
        return (bytes + ALIGN - 1) / ALIGN * ALIGN;
    }

    private static long magic(String eight) {
        return ByteBuffer.wrap(eight.getBytes(StandardCharsets.US_ASCII)).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    private static String hex(int crc) {
        return String.format("0x%08x", crc);
    }
}
