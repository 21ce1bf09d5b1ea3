package dev.muon;

import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * An output archive read back as an input archive: how the library reads libtorch's AdamW state
 * ({@link AdamWMoments}) and hands it a state built in Java ({@link AdamWStateArchive}). The bindings offer no
 * in-memory way, so the bytes go through a temporary file, removed afterwards.
 */
final class ArchiveRoundTrip {
    private ArchiveRoundTrip() {
    }

    /**
     * Writes {@code out} and reads it back.
     *
     * @param out the archive
     * @return the same content as an input archive
     * @throws UncheckedIOException if the temporary file cannot be written or read
     */
    static InputArchive of(OutputArchive out) {
        Path file = null;
        try {
            file = Files.createTempFile("muon-archive", ".pt");
            out.save_to(file.toString());
            InputArchive in = new InputArchive();
            in.load_from(file.toString());
            return in;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    // a leftover temporary file is harmless
                }
            }
        }
    }
}
