package dev.muon;

import dev.muon.internal.Messages;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.ArchiveWriter;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Reader;
import org.bytedeco.pytorch.SizeTSupplier;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipInputStream;

/**
 * A libtorch archive on disk, written and read through Java channels, with a SHA-256 of every byte appended:
 * {@code [archive bytes][SHA-256 of them, 32 bytes][MAGIC, 8 bytes]}.
 *
 * <p>Why Java channels: libtorch's own file writer throws a C++ {@code std::ios_base::failure} on a full disk that
 * nothing catches, which kills the JVM. Here libtorch hands every byte to a callback that never fails towards it
 * (an I/O error is remembered and the rest discarded), and the error is raised in Java once libtorch has returned.
 *
 * <p>Why the checksum: libtorch's zip reader checks no CRC, so a flipped bit in a tensor record loads silently. A
 * read verifies the whole file before libtorch parses any of it, and names the zip record that fails its CRC-32
 * when one does. A file without the trailer (written before it existed) is reported as such, so that the caller
 * can decide what to accept.
 */
final class ArchiveFile {
    /** Marks the trailer: SHA-256, trailer layout 1. */
    static final byte[] MAGIC = "MUONSHA1".getBytes(StandardCharsets.US_ASCII);
    static final int TRAILER = 32 + MAGIC.length;
    /** The most bytes one ByteBuffer view covers in the callbacks. */
    private static final long CHUNK = 1L << 30;

    /** Opens the file a checkpoint is written to; tests inject faults here. */
    @FunctionalInterface
    interface Opener {
        SeekableByteChannel open(Path path) throws IOException;
    }

    /** What a verified file holds: where the archive ends, the file's SHA-256, and whether it had a trailer. */
    record Verified(long archiveBytes, String sha256, boolean checksummed) {
    }

    private ArchiveFile() {
    }

    /**
     * Writes {@code archive} to {@code path} (a new file) with the checksum trailer and forces it to disk.
     *
     * @throws IOException if a write fails (the file is then incomplete: the caller deletes it)
     */
    static void write(OutputArchive archive, Path path, Opener opener) throws IOException {
        MessageDigest digest = sha256();
        try (SeekableByteChannel channel = opener.open(path)) {
            ChannelWriter writer = new ChannelWriter(channel, digest);
            try {
                archive.save_to(writer);
            } catch (RuntimeException e) {
                throw new IOException("libtorch could not serialize the checkpoint: " + Messages.firstLine(e), e);
            } finally {
                writer.close();
            }
            if (writer.failure != null) {
                throw writer.failure;
            }
            writeFully(channel, ByteBuffer.wrap(digest.digest()));
            writeFully(channel, ByteBuffer.wrap(MAGIC));
            if (channel instanceof FileChannel file) {
                file.force(true);
            }
        }
    }

    /**
     * Reads the whole file once, checks its trailer's SHA-256, and says where the archive ends.
     *
     * @throws IllegalStateException naming the record that fails its CRC-32, if the checksum does not match
     * @throws UncheckedIOException  if the file cannot be read
     */
    static Verified verify(Path path) {
        try {
            long size = Files.size(path);
            long archive = Math.max(0, size - TRAILER);
            // One pass: a digest of the part a trailer would cover, one of the whole file, and the last bytes.
            MessageDigest archiveDigest = sha256();
            MessageDigest fileDigest = sha256();
            byte[] tail = new byte[(int) Math.min(size, TRAILER)];
            try (InputStream in = Files.newInputStream(path)) {
                byte[] buffer = new byte[1 << 16];
                long pos = 0;
                int n;
                while ((n = in.read(buffer)) > 0) {
                    long end = pos + n;
                    fileDigest.update(buffer, 0, n);
                    if (pos < archive) {
                        archiveDigest.update(buffer, 0, (int) (Math.min(end, archive) - pos));
                    }
                    if (end > archive) {
                        int from = (int) Math.max(0, archive - pos);
                        System.arraycopy(buffer, from, tail, (int) (pos + from - archive), n - from);
                    }
                    pos = end;
                }
                if (pos != size) {
                    throw new IOException("the file changed size while it was read");
                }
            }
            boolean checksummed = size >= TRAILER && Arrays.equals(Arrays.copyOfRange(tail, 32, TRAILER), MAGIC);
            if (!checksummed) {
                return new Verified(size, HexFormat.of().formatHex(fileDigest.digest()), false);
            }
            byte[] actual = archiveDigest.digest();
            if (!Arrays.equals(actual, Arrays.copyOf(tail, 32))) {
                String record = failingRecord(path, archive);
                throw new IllegalStateException("checkpoint " + path + " is corrupt: its SHA-256 does not match "
                        + "the one stored with it (" + (record == null
                        ? "every record passes its CRC-32, so the zip directory or the checksum itself changed"
                        : "record '" + record + "' fails its CRC-32") + "); nothing was changed");
            }
            return new Verified(archive, HexFormat.of().formatHex(fileDigest.digest()), true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read checkpoint " + path, e);
        }
    }

    /** Loads the first {@code bytes} bytes of the file into {@code archive} through a reading callback. */
    static void load(InputArchive archive, Path path, long bytes) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            ChannelReader reader = new ChannelReader(channel, bytes);
            Size size = new Size(bytes);
            try {
                archive.load_from(reader, size);
            } finally {
                reader.close();
                size.close();
            }
            if (reader.failure != null) {
                throw reader.failure;
            }
        }
    }

    /** The first zip entry whose data fails its CRC-32, or null when every entry passes. */
    private static String failingRecord(Path path, long archiveBytes) {
        try (ZipInputStream zip = new ZipInputStream(new BoundedInput(Files.newInputStream(path), archiveBytes))) {
            ZipEntry entry;
            String current = null;
            try {
                while ((entry = zip.getNextEntry()) != null) {
                    current = entry.getName();
                    zip.transferTo(java.io.OutputStream.nullOutputStream());
                }
            } catch (ZipException e) {
                return current == null ? "(the first local header)" : current;
            }
            return null;
        } catch (IOException e) {
            return null;
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    private static void writeFully(SeekableByteChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    /**
     * libtorch's writing callback: every byte goes to the channel and the digest. It always reports every byte as
     * written, because a short count makes libtorch throw from inside its writer, whose destructor then writes
     * again and terminates the process; the first I/O error is kept for Java to raise afterwards.
     */
    private static final class ChannelWriter extends ArchiveWriter {
        private final SeekableByteChannel channel;
        private final MessageDigest digest;
        IOException failure;

        ChannelWriter(SeekableByteChannel channel, MessageDigest digest) {
            this.channel = channel;
            this.digest = digest;
        }

        @Override
        public long call(Pointer data, long size) {
            if (failure != null || size == 0) {
                return size;
            }
            try {
                // A record can exceed what one ByteBuffer addresses (2 GiB): walk it in chunks.
                for (long offset = 0; offset < size; offset += CHUNK) {
                    long n = Math.min(CHUNK, size - offset);
                    ByteBuffer bytes = new BytePointer(data).position(offset).capacity(offset + n).asBuffer();
                    digest.update(bytes.duplicate());
                    writeFully(channel, bytes);
                }
            } catch (IOException e) {
                failure = e;
            } catch (RuntimeException e) {
                failure = new IOException(e);
            }
            return size;
        }
    }

    /** libtorch's reading callback over the archive part of the file; an I/O error reads as zero bytes. */
    private static final class ChannelReader extends Reader {
        private final FileChannel channel;
        private final long bytes;
        IOException failure;

        ChannelReader(FileChannel channel, long bytes) {
            this.channel = channel;
            this.bytes = bytes;
        }

        @Override
        public long call(long pos, Pointer buf, long n) {
            long count = Math.max(0, Math.min(n, bytes - pos));
            try {
                long at = pos;
                for (long offset = 0; offset < count; offset += CHUNK) {
                    long len = Math.min(CHUNK, count - offset);
                    ByteBuffer target = new BytePointer(buf).position(offset).capacity(offset + len).asBuffer();
                    while (target.hasRemaining()) {
                        int read = channel.read(target, at);
                        if (read < 0) {
                            return at - pos;
                        }
                        at += read;
                    }
                }
                return at - pos;
            } catch (IOException e) {
                failure = e;
                return 0;
            }
        }
    }

    /** The archive's size, for libtorch's reader. */
    private static final class Size extends SizeTSupplier {
        private final long bytes;

        Size(long bytes) {
            this.bytes = bytes;
        }

        @Override
        public long call() {
            return bytes;
        }
    }

    /** An input stream that ends after {@code limit} bytes (the archive, without the trailer). */
    private static final class BoundedInput extends java.io.FilterInputStream {
        private long left;

        BoundedInput(InputStream in, long limit) {
            super(in);
            this.left = limit;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) {
                return -1;
            }
            int b = super.read();
            if (b >= 0) {
                left--;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left <= 0) {
                return -1;
            }
            int n = super.read(b, off, (int) Math.min(len, left));
            if (n > 0) {
                left -= n;
            }
            return n;
        }
    }
}
