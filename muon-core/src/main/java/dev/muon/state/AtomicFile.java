package dev.muon.state;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Replaces a file atomically: the content is written to a new temporary file in the target's directory
 * ({@code .<name>.tmp-<pid>-<nanos>}), forced to disk, renamed over the target, and the directory is forced too.
 * A crash or a failed write leaves the target as it was, the old file or none, never a partial one; the
 * temporary file is removed on failure.
 *
 * <p>Not API (see this package): the one writer of muon-core's checkpoint and PyTorch state files.
 */
final class AtomicFile {
    /** Writes the content into the open temporary file. */
    @FunctionalInterface
    public interface Content {
        /**
         * Writes everything.
         *
         * @param channel the temporary file, empty and positioned at 0
         * @throws IOException if a write fails
         */
        void writeTo(SeekableByteChannel channel) throws IOException;
    }

    /** Opens the temporary file; tests inject faults (a full disk) here. */
    @FunctionalInterface
    public interface Opener {
        /**
         * Creates and opens a new file for writing.
         *
         * @param path the file
         * @return the channel
         * @throws IOException if it cannot be created
         */
        SeekableByteChannel open(Path path) throws IOException;
    }

    /** The opener of real files: a new file, for reading and writing. */
    public static final Opener NEW_FILE = path -> FileChannel.open(path, StandardOpenOption.CREATE_NEW,
            StandardOpenOption.READ, StandardOpenOption.WRITE);

    private AtomicFile() {
    }

    /**
     * Replaces {@code target} with what {@code content} writes.
     *
     * @param target  the file
     * @param what    what the file is, for the message ("checkpoint", "torch state dict")
     * @param content writes the bytes
     * @param opener  opens the temporary file ({@link #NEW_FILE})
     * @throws UncheckedIOException if anything fails; the message names the target, the cause, the free space, and
     *                              says that the previous file is intact
     */
    public static void write(Path target, String what, Content content, Opener opener) {
        Path absolute = target.toAbsolutePath();
        Path dir = absolute.getParent();
        Path tmp = dir.resolve("." + absolute.getFileName() + ".tmp-" + ProcessHandle.current().pid() + "-"
                + System.nanoTime());
        try {
            try (SeekableByteChannel channel = opener.open(tmp)) {
                content.writeTo(channel);
                if (channel instanceof FileChannel file) {
                    file.force(true);
                }
            }
            try {
                Files.move(tmp, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("this file system cannot replace " + absolute + " atomically", e);
            }
            forceDirectory(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot save " + what + " " + absolute + ": writing " + tmp.getFileName()
                    + " failed (" + e.getMessage() + "); " + freeSpace(dir) + "; the previous file, if any, is "
                    + "intact", e);
        } finally {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // best effort: the target is intact either way
            }
        }
    }

    private static String freeSpace(Path dir) {
        try {
            return Files.getFileStore(dir).getUsableSpace() + " bytes are free in " + dir;
        } catch (IOException e) {
            return "the free space in " + dir + " is unknown";
        }
    }

    /** Makes the rename durable; not every platform can open a directory, and then the rename is still atomic. */
    private static void forceDirectory(Path dir) {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException | UnsupportedOperationException ignored) {
            // Windows cannot open directories; the rename itself is still atomic there
        }
    }
}
