package dev.muon.state;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Reads a state file the one way every reader of this package reports a failure: a missing file, one that cannot
 * be read, and a {@link FormatException} of the bytes become a {@link StateFileException} naming the file, the entry
 * and the rule.
 *
 * <p>Not API (see this package): the reading counterpart of {@link AtomicFile}.
 */
final class StateFileRead {
    /** Reads the file: opens it, checks its bytes and returns what they hold. */
    @FunctionalInterface
    interface Body<R> {
        /**
         * Reads everything.
         *
         * @return what the file holds
         * @throws IOException if a read fails
         */
        R read() throws IOException;
    }

    private StateFileRead() {
    }

    /**
     * Runs {@code body} on an existing regular file.
     *
     * @param file the file
     * @param what what the file is read as, for the message ("checkpoint", "torch state dict")
     * @param body reads it
     * @param <R>  what it holds
     * @return what {@code body} returns
     * @throws StateFileException if the file is missing or not a regular file, cannot be read, or {@code body}
     *                            throws a {@link FormatException}
     */
    static <R> R read(Path file, String what, Body<R> body) {
        if (!Files.isRegularFile(file)) {
            throw new StateFileException(what, file, "the file", "does not exist or is not a regular file", null);
        }
        try {
            return body.read();
        } catch (FormatException e) {
            throw new StateFileException(what, file, e.entry(), e.rule(), e);
        } catch (NoSuchFileException e) {
            throw new StateFileException(what, file, "the file", "does not exist", e);
        } catch (IOException e) {
            throw new StateFileException(what, file, "the file", "cannot be read: " + e.getMessage(), e);
        }
    }
}
