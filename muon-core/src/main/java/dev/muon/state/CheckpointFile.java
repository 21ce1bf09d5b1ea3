package dev.muon.state;

import dev.muon.BufferSpec;
import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * muon-core's checkpoint file: an {@link OptimizerState} as a safetensors file, data only, which Python's
 * {@code safetensors} package (or any JSON reader) can also open:
 * <pre>
 *   __metadata__   format "dev.muon.checkpoint", format_version "3", sha256 (of the file, see below), and
 *                  state: a JSON document of the step, each Muon group's config and AdamW's (every field, typed),
 *                  the schedule record, and one object per named parameter (name, optimizer, group, shape,
 *                  dtype, tied_to, row_split, adamw_step)
 *   value/&lt;name&gt;           the parameter's value
 *   &lt;key&gt;/&lt;name&gt;          each Muon state buffer its group's update declares ({@link BufferSpec#key()}):
 *                            momentum/ (the momentum buffer), second_moment/ (NorMuon's per-row second moment)
 *   exp_avg/&lt;name&gt;, exp_avg_sq/&lt;name&gt;   AdamW's moments
 * </pre>
 *
 * <p>This is the libtorch side of the format: the file's document and bytes are {@link CheckpointBytes}'s, which
 * muon-djl uses without libtorch, so both modules write and read one format with one set of checks.
 *
 * <p>Writing replaces the file atomically ({@link AtomicFile}). Reading never runs anything from the file and
 * checks every byte's place before libtorch sees it ({@link Safetensors}: header bounds, dtypes, shapes, offsets);
 * the SHA-256 of the whole file (its own 64 digits read as zeros) is verified before the state is returned; the
 * state document must name every tensor and nothing else. Whether the state then fits an optimizer is
 * {@link StateFit}'s question. See {@code docs/checkpoints.md}.
 */
public final class CheckpointFile {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The format's name in the metadata. */
    public static final String FORMAT = CheckpointBytes.FORMAT;
    /** The format's version: 3, the safetensors layout (1 and 2 were libtorch archives, no longer read). */
    public static final String FORMAT_VERSION = CheckpointBytes.FORMAT_VERSION;

    private CheckpointFile() {
    }

    /**
     * Writes a state, replacing {@code file} atomically.
     *
     * @param file  the target
     * @param state the state
     * @throws UncheckedIOException if the file cannot be written; {@code file} is then unchanged
     */
    public static void write(Path file, OptimizerState state) {
        write(file, state, AtomicFile.NEW_FILE);
    }

    /** {@link #write(Path, OptimizerState)} through another opener of the temporary file (tests: a full disk). */
    static void write(Path file, OptimizerState state, AtomicFile.Opener opener) {
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        state.tensors().forEach((name, t) -> tensors.put(name, t.detach()));
        CheckpointBytes.write(file, state.document(), tensors, TensorBytes.TORCH, opener);
    }

    /**
     * Reads a checkpoint.
     *
     * @param file the file
     * @return the state it holds; its tensors are new CPU tensors of the caller's {@code PointerScope}
     * @throws StateFileException if the file is missing, not a checkpoint, truncated, corrupt or malformed, naming
     *                            the entry and the rule
     */
    public static OptimizerState read(Path file) {
        return read(file, described -> { });
    }

    /**
     * Reads a checkpoint for a reader that first checks what it describes: {@code beforeTensors} gets the state
     * without its tensors (step, configs, schedule record, every entry's spec) after the header and the state
     * document are checked and before any tensor is allocated or the SHA-256 is computed, so that a file whose
     * shapes do not fit an optimizer (a sparse file of a terabyte, say) is refused without reading it. Each tensor
     * holds at most the elements its entry's shape in the state document gives it, so the document's shapes bound
     * what is allocated. The checks are {@link CheckpointBytes}'s, which reads the same files without libtorch.
     *
     * @param file          the file
     * @param beforeTensors checks the described state; what it throws, {@code read} throws (an optimizer's load
     *                      passes {@link StateFit#require})
     * @return the state it holds; its tensors are new CPU tensors of the caller's {@code PointerScope}
     * @throws StateFileException if the file is missing, not a checkpoint, truncated, corrupt or malformed, naming
     *                            the entry and the rule
     */
    public static OptimizerState read(Path file, Consumer<OptimizerState> beforeTensors) {
        Objects.requireNonNull(beforeTensors, "beforeTensors must not be null");
        CheckpointBytes.Read<Tensor> read = CheckpointBytes.read(file,
                document -> beforeTensors.accept(state(document, Map.of())), TensorBytes.TORCH);
        return state(read.document(), read.tensors());
    }

    /** A document and its tensors as a state: each entry's spec in libtorch's dtype, and its tensors. */
    private static OptimizerState state(CheckpointDocument document, Map<String, Tensor> tensors) {
        List<ParameterEntry> entries = new ArrayList<>();
        for (CheckpointDocument.Parameter p : document.parameters()) {
            String n = p.name();
            ScalarType dtype = TensorBytes.scalarType(TensorKind.ofDocumentName(p.dtype()));
            ParameterEntry e = ParameterEntry.of(new ParameterSpec(n, p.optimizer(), p.group(), p.shape(), dtype,
                    p.tiedTo(), p.rowSplit())).withValue(tensors.get(TensorNames.value(n)));
            for (BufferSpec d : document.declaredBuffers(p)) {
                e = e.withBuffer(d.key(), tensors.get(TensorNames.buffer(d, n)));
            }
            if (p.adamWStep() != null && tensors.containsKey(TensorNames.expAvg(n))) {
                e = e.withAdamW(new AdamWMoments(tensors.get(TensorNames.expAvg(n)), tensors.get(TensorNames.expAvgSq(n)),
                        p.adamWStep()));
            }
            entries.add(e);
        }
        return new OptimizerState(document.step(), document.muonConfigs(), document.adamWConfig(), entries,
                document.schedule());
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
        return CheckpointBytes.sha256(file);
    }
}
