package dev.muon.state;

import dev.muon.BufferSpec;
import dev.muon.internal.Messages;
import dev.muon.internal.TorchNatives;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * muon-core's checkpoint file without libtorch: a {@link CheckpointDocument} and its tensors as raw bytes
 * ({@link RawTensor}), in the very format {@link CheckpointFile} writes and reads for libtorch tensors, with the same
 * checks, because both are this class's codec. A module without libtorch's bindings (muon-djl) saves and loads its
 * optimizers' state through it; a file either writes, the other reads.
 *
 * <p>The file is a safetensors file: {@code __metadata__} holds {@code format} {@value #FORMAT},
 * {@code format_version} {@value #FORMAT_VERSION}, {@code sha256} (of the whole file, its own digits read as zeros)
 * and {@code state}, the document as JSON; the tensors are named {@code <kind>/<parameter>}: {@code value},
 * {@code exp_avg}, {@code exp_avg_sq}, and each Muon state buffer the parameter's group declares
 * ({@link BufferSpec#key()}). Writing replaces the file atomically. Reading runs nothing from the file, checks the
 * header, the document, that every tensor is one the document describes and no larger than its documented shape,
 * and that AdamW's moments come with their step, all before any tensor is allocated; then the SHA-256. See
 * {@code docs/checkpoints.md}.
 *
 * <pre>{@code
 * CheckpointBytes.write(file, document, Map.of("value/fc.weight", RawTensor.of("float32", shape, bytes)));
 * CheckpointBytes.Contents read = CheckpointBytes.read(file, described -> { });
 * }</pre>
 */
public final class CheckpointBytes {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The format's name in the metadata. */
    public static final String FORMAT = "dev.muon.checkpoint";
    /** The format's version: 3, the safetensors layout (1 and 2 were libtorch archives, no longer read). */
    public static final String FORMAT_VERSION = "3";
    static final String WHAT = "checkpoint";
    private static final Safetensors.Stamp STAMP = new Safetensors.Stamp(FORMAT, FORMAT_VERSION,
            "a Muon checkpoint", " (this library reads version " + FORMAT_VERSION + " only)");

    private CheckpointBytes() {
    }

    /**
     * What a checkpoint holds.
     *
     * @param document the state document
     * @param tensors  its tensors by {@code <kind>/<parameter>}, in file order
     */
    public record Contents(CheckpointDocument document, Map<String, RawTensor> tensors) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Copies the map.
         *
         * @throws NullPointerException if an argument is null
         */
        public Contents {
            Objects.requireNonNull(document, "document must not be null");
            tensors = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
        }

        /**
         * One tensor.
         *
         * @param kind      {@code value}, {@code exp_avg}, {@code exp_avg_sq} or a buffer's key
         * @param parameter the parameter's name
         * @return the tensor, or null when the file holds none
         */
        public RawTensor tensor(String kind, String parameter) {
            return tensors.get(TensorNames.of(kind, parameter));
        }

        /**
         * A parameter's value.
         *
         * @param parameter the parameter's name
         * @return the tensor, or null when the file holds none
         */
        public RawTensor value(String parameter) {
            return tensors.get(TensorNames.value(parameter));
        }

        /**
         * One of a parameter's declared Muon buffers.
         *
         * @param buffer    the declaration
         * @param parameter the parameter's name
         * @return the tensor, or null when the file holds none
         */
        public RawTensor buffer(BufferSpec buffer, String parameter) {
            return tensors.get(TensorNames.buffer(buffer, parameter));
        }

        /**
         * A parameter's AdamW moments.
         *
         * @param parameter the parameter's name
         * @return {@code exp_avg} and {@code exp_avg_sq}, or null when the file holds none
         */
        public RawTensor[] moments(String parameter) {
            RawTensor m = tensors.get(TensorNames.expAvg(parameter));
            return m == null ? null : new RawTensor[] {m, tensors.get(TensorNames.expAvgSq(parameter))};
        }
    }

    /**
     * The tensors of a checkpoint being written, named by the layout ({@code <kind>/<parameter>}) so that a binding
     * spells no tensor name.
     *
     * <pre>{@code
     * CheckpointBytes.write(file, document, new CheckpointBytes.Tensors().value("fc.weight", value));
     * }</pre>
     */
    public static final class Tensors {
        static {
            TorchNatives.extract();
        }

        private final Map<String, RawTensor> byName = new LinkedHashMap<>();

        /**
         * Adds a parameter's value.
         *
         * @param parameter the parameter's name
         * @param value     its value
         * @return this
         */
        public Tensors value(String parameter, RawTensor value) {
            byName.put(TensorNames.value(parameter), value);
            return this;
        }

        /**
         * Adds one of a parameter's declared Muon buffers.
         *
         * @param key       the declaration's key ({@link BufferSpec#key()})
         * @param parameter the parameter's name
         * @param buffer    its values
         * @return this
         */
        public Tensors buffer(String key, String parameter, RawTensor buffer) {
            byName.put(TensorNames.of(key, parameter), buffer);
            return this;
        }

        /**
         * Adds a parameter's AdamW moments.
         *
         * @param parameter the parameter's name
         * @param expAvg    {@code exp_avg}
         * @param expAvgSq  {@code exp_avg_sq}
         * @return this
         */
        public Tensors moments(String parameter, RawTensor expAvg, RawTensor expAvgSq) {
            byName.put(TensorNames.expAvg(parameter), expAvg);
            byName.put(TensorNames.expAvgSq(parameter), expAvgSq);
            return this;
        }

        /**
         * The tensors by name, in the order added.
         *
         * @return an unmodifiable view
         */
        public Map<String, RawTensor> byName() {
            return java.util.Collections.unmodifiableMap(byName);
        }
    }

    /**
     * Reads a checkpoint for an optimizer, fitting it once: the document to the optimizer's own after the header is
     * checked and before any tensor is read (a binding adds its own differences: a builder setting the file
     * contradicts), then each tensor's shape, dtype and values.
     *
     * @param file the file
     * @param mine the optimizer's own document
     * @param more the binding's differences of a candidate document, empty when none
     * @return what the file holds, fitted
     * @throws StateFileException     if the file is missing, not a checkpoint, truncated, corrupt or malformed
     * @throws StateMismatchException listing every difference
     */
    public static Contents readFor(Path file, CheckpointDocument mine,
                                   java.util.function.Function<CheckpointDocument,
                                           List<StateMismatchException.Difference>> more) {
        String source = "checkpoint " + file;
        // The document is fitted once, before any tensor is read; the tensors once, after.
        Contents read = read(file, described -> {
            List<StateMismatchException.Difference> found = new java.util.ArrayList<>(
                    CheckpointFit.documentDifferences(mine, described));
            found.addAll(more.apply(described));
            requireNone(found, source);
        });
        requireNone(CheckpointFit.tensorDifferences(read.document(), read.tensors(), RawTensor.IO), source);
        return read;
    }

    private static void requireNone(List<StateMismatchException.Difference> found, String source) {
        if (!found.isEmpty()) {
            throw new StateMismatchException(source, found);
        }
    }

    /**
     * Writes a checkpoint, replacing {@code file} atomically. Every tensor must be one the document describes:
     * {@code <kind>/<name>} of a parameter that is not a tied name, a kind of {@code TensorNames.FIXED_KINDS} or a buffer its
     * group declares, of the documented shape (the buffer's declared shape); AdamW's moments exactly where the
     * document gives an AdamW step.
     *
     * @param file     the target
     * @param document the state document
     * @param tensors  the tensors by {@code <kind>/<parameter>}
     * @throws IllegalArgumentException if a tensor is not one the document describes, or has another shape; nothing
     *                                  is written then
     * @throws UncheckedIOException     if the file cannot be written; {@code file} is then unchanged
     */
    public static void write(Path file, CheckpointDocument document, Map<String, RawTensor> tensors) {
        Objects.requireNonNull(document, "document must not be null");
        for (Map.Entry<String, RawTensor> e : tensors.entrySet()) {
            String name = e.getKey();
            int slash = name.indexOf('/');
            String kind = slash < 0 ? "" : name.substring(0, slash);
            CheckpointDocument.Parameter p = slash < 0 ? null
                    : document.parameter(name.substring(slash + 1)).orElse(null);
            Set<String> kinds = kinds(document, p);
            if (p == null || p.isTied() || !kinds.contains(kind)) {
                throw new IllegalArgumentException("tensor '" + name + "' is not '<kind>/<name>' of a parameter of "
                        + "the document with a kind of " + kinds);
            }
            long[] expected = documented(document, p, kind);
            if (!Arrays.equals(expected, e.getValue().shape())) {
                throw new IllegalArgumentException("tensor '" + name + "' has shape "
                        + Arrays.toString(e.getValue().shape()) + ", the document gives " + Arrays.toString(expected));
            }
        }
        for (CheckpointDocument.Parameter p : document.parameters()) {
            boolean moments = tensors.containsKey(TensorNames.expAvg(p.name()))
                    && tensors.containsKey(TensorNames.expAvgSq(p.name()));
            boolean either = tensors.containsKey(TensorNames.expAvg(p.name()))
                    || tensors.containsKey(TensorNames.expAvgSq(p.name()));
            if ((p.adamWStep() != null) != moments || either != moments) {
                throw new IllegalArgumentException("parameter '" + p.name() + "' must have exp_avg, exp_avg_sq and "
                        + "an AdamW step together, or none of them");
            }
        }
        write(file, document, tensors, RawTensor.IO, AtomicFile.NEW_FILE);
    }

    /**
     * Writes a checkpoint of any module's tensors, replacing {@code file} atomically.
     *
     * @param file     the target
     * @param document the state document
     * @param tensors  the tensors by {@code <kind>/<parameter>}
     * @param io       their module
     * @param opener   opens the temporary file (tests: a full disk)
     * @param <T>      the tensor type
     */
    static <T> void write(Path file, CheckpointDocument document, Map<String, T> tensors, TensorIo<T> io,
                          AtomicFile.Opener opener) {
        Map<String, String> metadata = STAMP.metadata();
        metadata.put("state", Json.write(document.toJson()));
        AtomicFile.write(file, WHAT, channel -> Safetensors.write(channel, metadata, tensors, io), opener);
    }

    /**
     * Reads a checkpoint into raw tensors, for a reader that first checks what it describes: {@code beforeTensors}
     * gets the document after the header and the document are checked and before any tensor is allocated or the
     * SHA-256 computed, so that a file whose shapes do not fit (a sparse file of a terabyte, say) is refused without
     * reading it.
     *
     * @param file          the file
     * @param beforeTensors checks the document; what it throws, {@code read} throws
     * @return the document and its tensors, new memory filled from checked bytes
     * @throws StateFileException if the file is missing, not a checkpoint, truncated, corrupt or malformed, naming
     *                            the entry and the rule
     */
    public static Contents read(Path file, Consumer<CheckpointDocument> beforeTensors) {
        Read<RawTensor> read = read(file, beforeTensors, RawTensor.IO);
        return new Contents(read.document(), read.tensors());
    }

    /** A read file: its document and its tensors in one module's form. */
    record Read<T>(CheckpointDocument document, Map<String, T> tensors) {
    }

    /**
     * Reads a checkpoint into any module's tensors: {@link #read(Path, Consumer)} with another {@link TensorIo}.
     *
     * @param file          the file
     * @param beforeTensors checks the document before any tensor is allocated
     * @param io            the module
     * @param <T>           the tensor type
     * @return the document and the tensors
     * @throws StateFileException if the file is missing, not a checkpoint, truncated, corrupt or malformed
     */
    static <T> Read<T> read(Path file, Consumer<CheckpointDocument> beforeTensors, TensorIo<T> io) {
        Objects.requireNonNull(beforeTensors, "beforeTensors must not be null");
        return StateFileRead.read(file, WHAT, () -> readChecked(file, beforeTensors, io));
    }

    /** {@link #read(Path, Consumer, TensorIo)} on an existing file: a document that is no state is named so. */
    private static <T> Read<T> readChecked(Path file, Consumer<CheckpointDocument> beforeTensors, TensorIo<T> io)
            throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            Safetensors.Header header = Safetensors.readHeader(channel);
            Map<String, String> meta = header.metadata();
            STAMP.check(meta);
            String text = meta.get("state");
            if (text == null) {
                throw new FormatException("__metadata__.state", "is missing");
            }
            CheckpointDocument document = CheckpointDocument.parse(Json.parse(text, "__metadata__.state"));
            Set<String> present = new HashSet<>();
            for (Safetensors.Entry e : header.entries()) {
                String name = e.name();
                int slash = name.indexOf('/');
                String kind = slash < 0 ? "" : name.substring(0, slash);
                String param = slash < 0 ? "" : name.substring(slash + 1);
                CheckpointDocument.Parameter p = document.parameter(param).orElse(null);
                Set<String> kinds = kinds(document, p);
                if (!kinds.contains(kind) || p == null || p.isTied()) {
                    throw new FormatException("tensor '" + Messages.shortened(name) + "'", "is not '<kind>/<name>' "
                            + "of a parameter of the state with a kind of " + kinds);
                }
                // The header alone could claim terabytes: the document's shape bounds what is allocated (and a
                // smaller tensor is the fit check's to name, with both shapes).
                long[] documented = documented(document, p, kind);
                String where = "parameter '" + Messages.shortened(p.name()) + "'";
                long allowed = TensorKind.elementCount(documented, where);
                long count = TensorKind.elementCount(e.shape(), "tensor '" + Messages.shortened(name) + "'");
                if (count > allowed) {
                    throw new FormatException("tensor '" + Messages.shortened(name) + "'", "has shape "
                            + Messages.shortened(e.shape()) + " (" + count + " elements), more than the " + allowed
                            + " of " + Messages.shortened(documented) + " that the state document gives "
                            + where);
                }
                present.add(name);
            }
            for (CheckpointDocument.Parameter p : document.parameters()) {
                boolean hasStep = p.adamWStep() != null;
                boolean hasMoments = present.contains(TensorNames.expAvg(p.name()))
                        && present.contains(TensorNames.expAvgSq(p.name()));
                boolean hasEither = present.contains(TensorNames.expAvg(p.name()))
                        || present.contains(TensorNames.expAvgSq(p.name()));
                if (hasStep != hasMoments || hasEither != hasMoments) {
                    throw new FormatException("parameter '" + Messages.shortened(p.name()) + "'", "must have "
                            + "exp_avg, exp_avg_sq and adamw_step together, or none of them");
                }
            }
            beforeTensors.accept(document);
            return new Read<>(document, Safetensors.readTensors(channel, header, io));
        } catch (IllegalArgumentException e) {
            throw new StateFileException(WHAT, file, "__metadata__.state", "is invalid: " + e.getMessage(), e);
        }
    }

    /** The kinds of tensor a parameter may have: the fixed ones and the buffers its group declares. */
    private static Set<String> kinds(CheckpointDocument document, CheckpointDocument.Parameter p) {
        Set<String> kinds = new TreeSet<>(TensorNames.FIXED_KINDS);
        if (p != null) {
            document.declaredBuffers(p).forEach(d -> kinds.add(d.key()));
        }
        return kinds;
    }

    /** The shape the document gives a tensor of a parameter: the parameter's, or a declared buffer's. */
    private static long[] documented(CheckpointDocument document, CheckpointDocument.Parameter p, String kind) {
        List<BufferSpec> declared = document.declaredBuffers(p);
        return declared.stream().filter(d -> d.key().equals(kind)).findFirst().map(d -> d.shape().of(p.shape()))
                .orElse(p.shape());
    }

    /**
     * The SHA-256 a checkpoint's header records: what distributed ranks compare to agree that they read the same
     * file. Reads the header only; {@link #read} verifies the digest.
     *
     * @param file the file
     * @return the digest, 64 hex digits
     * @throws StateFileException if the header is malformed or has no digest
     */
    public static String sha256(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            String digest = Safetensors.readHeader(channel).metadata().get(Safetensors.DIGEST_KEY);
            if (digest == null) {
                throw new FormatException("__metadata__." + Safetensors.DIGEST_KEY, "is missing");
            }
            return digest;
        } catch (FormatException e) {
            throw new StateFileException(WHAT, file, e.entry(), e.rule(), e);
        } catch (IOException e) {
            throw new StateFileException(WHAT, file, "the file", "cannot be read: " + e.getMessage(), e);
        }
    }
}
