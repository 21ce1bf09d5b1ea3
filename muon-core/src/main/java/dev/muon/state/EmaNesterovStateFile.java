package dev.muon.state;

import dev.muon.internal.Messages;
import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Tensor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The state file of {@link dev.muon.EmaNesterov}: a safetensors file with muon-core's SHA-256 (as
 * {@link CheckpointFile}), written atomically, holding the wrapper's step count and reference lr in its metadata and
 * one tensor {@code ema/<parameter>} per wrapped parameter, the EMA of its increments, in the parameter's dtype.
 * The wrapped optimizer's state is not in it: that optimizer saves its own.
 *
 * <pre>
 *   __metadata__: format = "muon-ema-nesterov", format_version = "1", step = "&lt;long&gt;",
 *                 reference_lr = "&lt;double, Java's shortest round-trip text&gt;", sha256 = ...
 *   ema/&lt;name&gt;: the EMA m of parameter &lt;name&gt;
 * </pre>
 */
public final class EmaNesterovStateFile {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private static final String WHAT = "EMA-Nesterov state";
    private static final String FORMAT = "muon-ema-nesterov";
    private static final String FORMAT_VERSION = "1";
    private static final Safetensors.Stamp STAMP = new Safetensors.Stamp(FORMAT, FORMAT_VERSION,
            "an EMA-Nesterov state file", "");
    private static final String PREFIX = "ema/";

    /**
     * What the file holds.
     *
     * @param step        the number of completed steps
     * @param referenceLr the lr that β's scale is relative to
     * @param ema         the EMA per parameter name, in file order
     */
    public record Contents(long step, double referenceLr, Map<String, Tensor> ema) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Copies the map.
         *
         * @throws IllegalArgumentException if the step is negative or the lr not finite and {@code >= 0}
         */
        public Contents {
            if (step < 0) {
                throw new IllegalArgumentException("step must be >= 0, got " + step);
            }
            if (!Double.isFinite(referenceLr) || !(referenceLr >= 0)) {
                throw new IllegalArgumentException("reference_lr must be finite and >= 0, got " + referenceLr);
            }
            ema = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(ema));
        }
    }

    private EmaNesterovStateFile() {
    }

    /**
     * Writes the contents, replacing {@code file} atomically.
     *
     * @param file     the target
     * @param contents the state
     * @throws UncheckedIOException if the file cannot be written; {@code file} is then unchanged
     */
    public static void write(Path file, Contents contents) {
        Map<String, String> metadata = STAMP.metadata();
        metadata.put("step", Long.toString(contents.step()));
        metadata.put("reference_lr", Double.toString(contents.referenceLr()));
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        contents.ema().forEach((name, t) -> tensors.put(PREFIX + name, t.detach()));
        AtomicFile.write(file, WHAT, channel -> Safetensors.write(channel, metadata, tensors, TensorBytes.TORCH),
                AtomicFile.NEW_FILE);
    }

    /**
     * Reads a state file.
     *
     * @param file the file
     * @return its contents; the tensors are new CPU tensors of the caller's {@code PointerScope}
     * @throws StateFileException if the file is missing, not such a file, truncated, corrupt or malformed, naming
     *                            the entry and the rule
     */
    public static Contents read(Path file) {
        return StateFileRead.read(file, WHAT, () -> readChecked(file));
    }

    private static Contents readChecked(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            Safetensors.Header header = Safetensors.readHeader(channel);
            Map<String, String> meta = header.metadata();
            STAMP.check(meta);
            long step = parseStep(meta.get("step"));
            double lr = parseLr(meta.get("reference_lr"));
            for (Safetensors.Entry e : header.entries()) {
                if (!e.name().startsWith(PREFIX) || e.name().length() == PREFIX.length()) {
                    throw new FormatException("tensor '" + Messages.shortened(e.name()) + "'",
                            "is not 'ema/<parameter>'");
                }
            }
            Map<String, Tensor> ema = new LinkedHashMap<>();
            Safetensors.readTensors(channel, header, TensorBytes.TORCH)
                    .forEach((name, t) -> ema.put(name.substring(PREFIX.length()), t));
            return new Contents(step, lr, ema);
        }
    }

    private static long parseStep(String text) {
        try {
            long step = Long.parseLong(text == null ? "" : text);
            if (step >= 0) {
                return step;
            }
        } catch (NumberFormatException e) {
            // the message below names the value
        }
        throw new FormatException("__metadata__.step", "must be an integer >= 0, got " + quoted(text));
    }

    private static double parseLr(String text) {
        try {
            double lr = Double.parseDouble(text == null ? "" : text);
            if (Double.isFinite(lr) && lr >= 0) {
                return lr;
            }
        } catch (NumberFormatException e) {
            // the message below names the value
        }
        throw new FormatException("__metadata__.reference_lr", "must be a finite number >= 0, got " + quoted(text));
    }

    private static String quoted(String s) {
        return s == null ? "none" : "'" + Messages.shortened(s) + "'";
    }
}
