package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.RowSplit;
import dev.muon.internal.Messages;
import dev.muon.internal.TorchNatives;
import dev.muon.schedule.ScheduleRecord;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
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
    public static final String FORMAT = "dev.muon.checkpoint";
    /** The format's version: 3, the safetensors layout (1 and 2 were libtorch archives, no longer read). */
    public static final String FORMAT_VERSION = "3";
    private static final String WHAT = "checkpoint";
    /** The kinds of tensor every file may hold; a parameter's Muon state buffers add their declared keys. */
    private static final Set<String> FIXED_KINDS = Set.of("value", "exp_avg", "exp_avg_sq");

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
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put("format", FORMAT);
        metadata.put("format_version", FORMAT_VERSION);
        metadata.put("state", Json.write(document(state)));
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        for (ParameterEntry e : state.entries()) {
            put(tensors, "value", e, e.value());
            e.buffers().forEach((key, buffer) -> put(tensors, key, e, buffer));
            if (e.adamW() != null) {
                put(tensors, "exp_avg", e, e.adamW().expAvg());
                put(tensors, "exp_avg_sq", e, e.adamW().expAvgSq());
            }
        }
        AtomicFile.write(file, WHAT, channel -> Safetensors.write(channel, metadata, tensors), opener);
    }

    private static void put(Map<String, Tensor> tensors, String kind, ParameterEntry e, Tensor t) {
        if (t != null) {
            tensors.put(kind + "/" + e.name(), t.detach());
        }
    }

    private static Map<String, Object> document(OptimizerState state) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("step", state.step());
        List<Object> groups = new ArrayList<>();
        state.muonConfigs().forEach(c -> groups.add(ConfigFields.toJson(c, ConfigFields.MUON)));
        doc.put("muon_groups", groups);
        doc.put("adamw", state.adamWConfig() == null ? null
                : ConfigFields.toJson(state.adamWConfig(), ConfigFields.ADAMW));
        if (state.schedule() == null) {
            doc.put("schedule", null);
        } else {
            Map<String, Object> schedule = new LinkedHashMap<>();
            List<Object> lrs = new ArrayList<>();
            for (double lr : state.schedule().initialLrs()) {
                lrs.add(lr);
            }
            schedule.put("initial_lrs", lrs);
            schedule.put("schedule", ScheduleEntries.toJson(state.schedule()));
            doc.put("schedule", schedule);
        }
        List<Object> parameters = new ArrayList<>();
        for (ParameterEntry e : state.entries()) {
            ParameterSpec s = e.spec();
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("name", s.name());
            p.put("optimizer", s.optimizer().name());
            p.put("group", (long) s.group());
            List<Object> shape = new ArrayList<>();
            for (long size : s.shape()) {
                shape.add(size);
            }
            p.put("shape", shape);
            p.put("dtype", s.dtype().name());
            p.put("tied_to", s.tiedTo());
            p.put("row_split", rowSplit(s.rowSplit()));
            p.put("adamw_step", e.adamW() == null ? null : e.adamW().step());
            parameters.add(p);
        }
        doc.put("parameters", parameters);
        return doc;
    }

    private static Object rowSplit(RowSplit split) {
        return split == null ? null : RowSplitEntries.toMap(split);
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
     * what is allocated.
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
        if (!Files.isRegularFile(file)) {
            throw new StateFileException(WHAT, file, "the file", "does not exist or is not a regular file", null);
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            Safetensors.Header header = Safetensors.readHeader(channel);
            Map<String, String> meta = header.metadata();
            if (!FORMAT.equals(meta.get("format"))) {
                throw new FormatException("__metadata__.format", "must be '" + FORMAT + "', got "
                        + quoted(meta.get("format")) + " (not a Muon checkpoint)");
            }
            if (!FORMAT_VERSION.equals(meta.get("format_version"))) {
                throw new FormatException("__metadata__.format_version", "must be " + FORMAT_VERSION + ", got "
                        + quoted(meta.get("format_version")) + " (this library reads version " + FORMAT_VERSION
                        + " only)");
            }
            String document = meta.get("state");
            if (document == null) {
                throw new FormatException("__metadata__.state", "is missing");
            }
            Parsed parsed = parse(Json.parse(document, "__metadata__.state"));
            Set<String> expected = new java.util.HashSet<>();
            for (Safetensors.Entry e : header.entries()) {
                String name = e.name();
                int slash = name.indexOf('/');
                String kind = slash < 0 ? "" : name.substring(0, slash);
                String param = slash < 0 ? "" : name.substring(slash + 1);
                ParameterSpec spec = parsed.specs.get(param);
                Set<String> kinds = new java.util.TreeSet<>(FIXED_KINDS);
                List<BufferSpec> declared = spec == null ? List.of() : parsed.declaredBuffers(spec);
                declared.forEach(d -> kinds.add(d.key()));
                if (!kinds.contains(kind) || spec == null || spec.isTied()) {
                    throw new FormatException("tensor '" + Messages.shortened(name) + "'", "is not '<kind>/<name>' "
                            + "of a parameter of the state with a kind of " + kinds);
                }
                // The header alone could claim terabytes: the document's shape bounds what is allocated (and a
                // smaller tensor is StateFit's to name, with both shapes).
                long[] documented = declared.stream().filter(d -> d.key().equals(kind)).findFirst()
                        .map(spec::shapeOf).orElse(spec.shape());
                String where = "parameter '" + Messages.shortened(spec.name()) + "'";
                long allowed = TensorBytes.elementCount(documented, where);
                long count = TensorBytes.elementCount(e.shape(), "tensor '" + Messages.shortened(name) + "'");
                if (count > allowed) {
                    throw new FormatException("tensor '" + Messages.shortened(name) + "'", "has shape "
                            + Messages.shortened(e.shape()) + " (" + count + " elements), more than the " + allowed
                            + " of " + Messages.shortened(documented) + " that the state document gives "
                            + where);
                }
                expected.add(name);
            }
            for (ParameterSpec spec : parsed.specs.values()) {
                boolean hasStep = parsed.adamWSteps.containsKey(spec.name());
                boolean hasMoments = expected.contains("exp_avg/" + spec.name())
                        && expected.contains("exp_avg_sq/" + spec.name());
                boolean hasEither = expected.contains("exp_avg/" + spec.name())
                        || expected.contains("exp_avg_sq/" + spec.name());
                if (hasStep != hasMoments || hasEither != hasMoments) {
                    throw new FormatException("parameter '" + Messages.shortened(spec.name()) + "'", "must have "
                            + "exp_avg, exp_avg_sq and adamw_step together, or none of them");
                }
            }
            List<ParameterEntry> described = new ArrayList<>();
            parsed.specs.values().forEach(spec -> described.add(ParameterEntry.of(spec)));
            beforeTensors.accept(new OptimizerState(parsed.step, parsed.muonConfigs, parsed.adamWConfig, described,
                    parsed.schedule));
            Map<String, Tensor> tensors = Safetensors.readTensors(channel, header);
            List<ParameterEntry> entries = new ArrayList<>();
            for (ParameterSpec spec : parsed.specs.values()) {
                String n = spec.name();
                ParameterEntry e = ParameterEntry.of(spec).withValue(tensors.get("value/" + n));
                for (BufferSpec d : parsed.declaredBuffers(spec)) {
                    e = e.withBuffer(d.key(), tensors.get(d.key() + "/" + n));
                }
                if (parsed.adamWSteps.containsKey(n)) {
                    e = e.withAdamW(new AdamWMoments(tensors.get("exp_avg/" + n), tensors.get("exp_avg_sq/" + n),
                            parsed.adamWSteps.get(n)));
                }
                entries.add(e);
            }
            return new OptimizerState(parsed.step, parsed.muonConfigs, parsed.adamWConfig, entries,
                    parsed.schedule);
        } catch (FormatException e) {
            throw new StateFileException(WHAT, file, e.entry(), e.rule(), e);
        } catch (IllegalArgumentException e) {
            throw new StateFileException(WHAT, file, "__metadata__.state", "is invalid: " + e.getMessage(), e);
        } catch (NoSuchFileException e) {
            throw new StateFileException(WHAT, file, "the file", "does not exist", e);
        } catch (IOException e) {
            throw new StateFileException(WHAT, file, "the file", "cannot be read: " + e.getMessage(), e);
        }
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

    /** The state document, parsed: everything but the tensors. */
    private static final class Parsed {
        long step;
        List<MuonConfig> muonConfigs = new ArrayList<>();
        AdamWConfig adamWConfig;
        ScheduleRecord schedule;
        final Map<String, ParameterSpec> specs = new LinkedHashMap<>();
        final Map<String, Long> adamWSteps = new LinkedHashMap<>();

        /** The Muon state buffers a parameter's group's recipe declares ({@link OptimizerState#declaredBuffers}). */
        List<BufferSpec> declaredBuffers(ParameterSpec spec) {
            if (spec.optimizer() != dev.muon.OptimizerKind.MUON || spec.group() >= muonConfigs.size()) {
                return List.of();
            }
            return dev.muon.UpdateRecipe.of(muonConfigs.get(spec.group())).buffers();
        }
    }

    private static final Set<String> DOCUMENT_KEYS = Set.of("step", "muon_groups", "adamw", "schedule",
            "parameters");
    private static final Set<String> PARAMETER_KEYS = Set.of("name", "optimizer", "group", "shape", "dtype",
            "tied_to", "row_split", "adamw_step");

    private static Parsed parse(Object json) {
        Map<String, Object> doc = object(json, "__metadata__.state", DOCUMENT_KEYS);
        Parsed p = new Parsed();
        p.step = integer(doc.get("step"), "step");
        if (p.step < 0) {
            throw new FormatException("__metadata__.state.step", "must be >= 0, got " + p.step);
        }
        List<Object> groups = array(doc.get("muon_groups"), "muon_groups");
        for (int g = 0; g < groups.size(); g++) {
            p.muonConfigs.add(config(groups.get(g), ConfigFields.MUON, MuonConfig.defaults(), "muon_groups[" + g
                    + "]"));
        }
        if (doc.get("adamw") != null) {
            p.adamWConfig = config(doc.get("adamw"), ConfigFields.ADAMW, AdamWConfig.defaults(), "adamw");
        }
        if (doc.get("schedule") != null) {
            Map<String, Object> s = object(doc.get("schedule"), "__metadata__.state.schedule",
                    Set.of("initial_lrs", "schedule"));
            List<Object> lrs = array(s.get("initial_lrs"), "schedule.initial_lrs");
            double[] values = new double[lrs.size()];
            for (int g = 0; g < values.length; g++) {
                values[g] = number(lrs.get(g), "schedule.initial_lrs[" + g + "]");
            }
            try {
                p.schedule = ScheduleEntries.fromJson(values, s.get("schedule"), "__metadata__.state.schedule"
                        + ".schedule");
            } catch (IllegalArgumentException e) {
                throw new FormatException("__metadata__.state.schedule", e.getMessage());
            }
        }
        List<Object> parameters = array(doc.get("parameters"), "parameters");
        for (int i = 0; i < parameters.size(); i++) {
            String where = "__metadata__.state.parameters[" + i + "]";
            Map<String, Object> o = object(parameters.get(i), where, PARAMETER_KEYS);
            if (!(o.get("name") instanceof String name)) {
                throw new FormatException(where + ".name", "must be a string");
            }
            String label = "parameter '" + Messages.shortened(name) + "'";
            OptimizerKind optimizer = enumValue(OptimizerKind.class, o.get("optimizer"), label + " optimizer",
                    "MUON, ADAMW");
            long group = integer(o.get("group"), label + " group");
            List<Object> shapeList = array(o.get("shape"), label + " shape");
            if (shapeList.size() > Safetensors.MAX_RANK) {
                throw new FormatException(label, "has rank " + shapeList.size() + "; at most "
                        + Safetensors.MAX_RANK + " is read");
            }
            long[] shape = new long[shapeList.size()];
            for (int d = 0; d < shape.length; d++) {
                shape[d] = integer(shapeList.get(d), label + " shape");
            }
            ScalarType dtype = enumValue(ScalarType.class, o.get("dtype"), label + " dtype",
                    "Double, Float, Half, BFloat16, Long");
            if (TensorBytes.Kind.of(dtype) == null) {
                throw new FormatException(label, "has dtype " + dtype + ", which checkpoints do not hold");
            }
            Object tied = o.get("tied_to");
            if (tied != null && !(tied instanceof String)) {
                throw new FormatException(label + " tied_to", "must be null or a string");
            }
            ParameterSpec spec;
            try {
                spec = new ParameterSpec(name, optimizer, (int) Math.min(group, Integer.MAX_VALUE), shape, dtype,
                        (String) tied, parseRowSplit(o.get("row_split"), label));
            } catch (IllegalArgumentException e) {
                throw new FormatException(label, e.getMessage());
            }
            if (p.specs.put(name, spec) != null) {
                throw new FormatException(label, "appears twice");
            }
            if (o.get("adamw_step") != null) {
                p.adamWSteps.put(name, integer(o.get("adamw_step"), label + " adamw_step"));
            }
        }
        return p;
    }

    private static RowSplit parseRowSplit(Object json, String label) {
        return json == null ? null : RowSplitEntries.fromMap(json, label + " row_split");
    }

    private static <C extends Record> C config(Object json, List<ConfigFields.Field<C>> fields, C base,
                                               String where) {
        try {
            return ConfigFields.fromJson(json, fields, base);
        } catch (IllegalArgumentException e) {
            throw new FormatException("__metadata__.state." + where, e.getMessage());
        }
    }

    private static Map<String, Object> object(Object json, String where, Set<String> keys) {
        if (!(json instanceof Map<?, ?> map)) {
            throw new FormatException(where, "must be a JSON object");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            out.put((String) e.getKey(), e.getValue());
        }
        if (!out.keySet().equals(keys)) {
            throw new FormatException(where, "must have exactly the keys " + new java.util.TreeSet<>(keys)
                    + ", got " + Messages.shortened(new java.util.TreeSet<>(out.keySet())));
        }
        return out;
    }

    private static List<Object> array(Object json, String where) {
        if (!(json instanceof List<?> list)) {
            throw new FormatException("__metadata__.state." + where, "must be a JSON array");
        }
        return new ArrayList<>(list);
    }

    private static long integer(Object json, String where) {
        if (!(json instanceof Long l)) {
            throw new FormatException("__metadata__.state " + where, "must be an integer, got " + show(json));
        }
        return l;
    }

    private static double number(Object json, String where) {
        if (json instanceof Double d) {
            return d;
        }
        if (json instanceof Long l) {
            return l;
        }
        throw new FormatException("__metadata__.state." + where, "must be a number, got " + show(json));
    }

    private static <E extends Enum<E>> E enumValue(Class<E> type, Object json, String where, String allowed) {
        if (json instanceof String s) {
            for (E value : type.getEnumConstants()) {
                if (value.name().equals(s)) {
                    return value;
                }
            }
        }
        throw new FormatException("__metadata__.state " + where, "must be one of " + allowed + ", got "
                + show(json));
    }

    private static String show(Object json) {
        return json instanceof String s ? "'" + Messages.shortened(s) + "'"
                : json instanceof Map ? "an object" : json instanceof List ? "an array" : String.valueOf(json);
    }

    private static String quoted(String s) {
        return s == null ? "none" : "'" + Messages.shortened(s) + "'";
    }
}
