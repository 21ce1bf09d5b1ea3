package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.BufferSpec;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.RowSplit;
import dev.muon.UpdateRecipe;
import dev.muon.internal.Messages;
import dev.muon.internal.NullFreeList;
import dev.muon.internal.TorchNatives;
import dev.muon.schedule.ScheduleRecord;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * The state document of muon-core's checkpoint (its {@code __metadata__.state}), without libtorch: the step count,
 * each Muon group's config and AdamW's, the schedule record, and one description per named parameter, in the
 * optimizer's order. {@link CheckpointFile} turns an {@link OptimizerState} into one and back; a module without
 * libtorch's bindings (muon-djl) builds one for its own optimizer and writes it with raw tensor bytes
 * ({@link CheckpointBytes}). Validated as {@link OptimizerState} is, with the same messages.
 *
 * @param step        the optimizer's step count
 * @param muonConfigs each Muon group's configuration, at least one
 * @param adamWConfig the AdamW group's configuration, null when the optimizer has no AdamW part
 * @param schedule    the schedule record, or null
 * @param parameters  every named parameter, in the optimizer's order
 */
public record CheckpointDocument(long step, List<MuonConfig> muonConfigs, AdamWConfig adamWConfig,
                                 ScheduleRecord schedule, List<CheckpointDocument.Parameter> parameters) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * One named parameter.
     *
     * @param name      its name
     * @param optimizer the optimizer that updates it
     * @param group     its Muon group, or its AdamW group (0, or 1 for the undecayed one)
     * @param shape     its shape
     * @param dtype     its dtype as the file names it, libtorch's scalar type name: {@code Double}, {@code Float},
     *                  {@code Half}, {@code BFloat16}, {@code Long}
     * @param tiedTo    the name that holds its state when it is a later name of a tied weight, else null
     * @param rowSplit  its row split (Muon only), or null
     * @param adamWStep AdamW's step count of it, present exactly when the state holds its moments, else null
     */
    public record Parameter(String name, OptimizerKind optimizer, int group, long[] shape, String dtype,
                            String tiedTo, RowSplit rowSplit, Long adamWStep) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Validates as {@link ParameterSpec} does.
         *
         * @throws IllegalArgumentException for a negative group or size, a row split off Muon, or a tied name off
         *                                  AdamW
         * @throws NullPointerException     if the name, optimizer, shape or dtype is null
         */
        public Parameter {
            shape = checkPlacement(name, optimizer, group, shape, dtype, tiedTo, rowSplit);
        }

        /**
         * The checks a parameter's place passes, here and in {@link ParameterSpec} (bindings-free, so that both sides
         * of the checkpoint file refuse the same parameters with the same messages).
         *
         * @param dtype the parameter's dtype, as either side holds it: only checked to be there
         * @return a copy of {@code shape}
         * @throws IllegalArgumentException for a negative group or size, a row split off Muon, or a tied name off
         *                                  AdamW
         * @throws NullPointerException     if the name, optimizer, shape or dtype is null
         */
        static long[] checkPlacement(String name, OptimizerKind optimizer, int group, long[] shape, Object dtype,
                                     String tiedTo, RowSplit rowSplit) {
            Objects.requireNonNull(name, "name must not be null");
            Objects.requireNonNull(optimizer, "optimizer must not be null");
            Objects.requireNonNull(shape, "shape must not be null");
            Objects.requireNonNull(dtype, "dtype must not be null");
            shape = shape.clone();
            if (group < 0) {
                throw new IllegalArgumentException("group must be >= 0, got " + group + " for '" + Messages.shortened(name)
                        + "'");
            }
            for (long size : shape) {
                if (size < 0) {
                    throw new IllegalArgumentException("shape sizes must be >= 0, got " + Arrays.toString(shape)
                            + " for '" + Messages.shortened(name) + "'");
                }
            }
            if (rowSplit != null && optimizer != OptimizerKind.MUON) {
                throw new IllegalArgumentException("rowSplit is for Muon parameters only; '" + Messages.shortened(name)
                        + "' is on "
                        + optimizer);
            }
            if (tiedTo != null && optimizer != OptimizerKind.ADAMW) {
                throw new IllegalArgumentException("a tied name is listed on ADAMW; '" + Messages.shortened(name) + "' is on "
                        + optimizer);
            }
            return shape;
        }

        /**
         * The shape.
         *
         * @return a copy
         */
        @Override
        public long[] shape() {
            return shape.clone();
        }

        /**
         * Whether this is a later name of a tied weight.
         *
         * @return true when {@link #tiedTo()} is set
         */
        public boolean isTied() {
            return tiedTo != null;
        }

        /**
         * The dtype's name as {@link BufferSpec.Dtype} and muon-djl name it ({@code Float} is {@code float32}).
         *
         * @return the dtype name
         */
        public String dtypeName() {
            return TensorKind.dtypeNameOf(dtype);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Parameter p && name.equals(p.name) && optimizer == p.optimizer && group == p.group
                    && Arrays.equals(shape, p.shape) && dtype.equals(p.dtype) && Objects.equals(tiedTo, p.tiedTo)
                    && Objects.equals(rowSplit, p.rowSplit) && Objects.equals(adamWStep, p.adamWStep);
        }

        @Override
        public int hashCode() {
            return Objects.hash(name, optimizer, group, Arrays.hashCode(shape), dtype, tiedTo, rowSplit, adamWStep);
        }

        @Override
        public String toString() {
            return "'" + name + "' " + optimizer + " group " + group + " " + Arrays.toString(shape) + " " + dtype
                    + (tiedTo == null ? "" : " tied to '" + tiedTo + "'") + (rowSplit == null ? "" : " " + rowSplit)
                    + (adamWStep == null ? "" : " adamw_step " + adamWStep);
        }
    }

    /**
     * Validates and copies, with {@link OptimizerState}'s rules and messages.
     *
     * @throws IllegalArgumentException if the step is negative, there is no Muon config, two parameters share a
     *                                  name, a Muon parameter's group has no config, an AdamW parameter exists
     *                                  without an AdamW config or is in a group above 1, or a tied name refers to no
     *                                  parameter
     * @throws NullPointerException     if a list or element is null
     */
    public CheckpointDocument {
        if (step < 0) {
            throw new IllegalArgumentException("step must be >= 0, got " + step);
        }
        muonConfigs = NullFreeList.copyOf(muonConfigs, "muonConfigs");
        parameters = NullFreeList.copyOf(parameters, "parameters");
        checkPlaces(muonConfigs, adamWConfig, parameters.stream()
                .map(p -> new Place(p.name(), p.optimizer(), p.group(), p.tiedTo())).toList(), Messages::shortened);
    }

    /**
     * What the rules on a state's parameters read of one: its name, optimizer, group and tied name.
     *
     * @param name      the name
     * @param optimizer the optimizer that updates it
     * @param group     its group
     * @param tiedTo    the name it is tied to, or null
     */
    record Place(String name, OptimizerKind optimizer, int group, String tiedTo) {
    }

    /**
     * The rules a state's parameters follow, here and in {@link OptimizerState} (so that both refuse the same
     * states with the same messages): a Muon config at least, distinct names, a Muon group with a config, AdamW
     * with a config and in group 0 or 1, a tied name tied to an entry.
     *
     * @param muonConfigs each Muon group's configuration
     * @param adamWConfig the AdamW configuration, or null
     * @param places      every parameter, in order
     * @param shown       how a message shows a name
     * @throws IllegalArgumentException naming the rule and the parameter
     */
    static void checkPlaces(List<MuonConfig> muonConfigs, AdamWConfig adamWConfig, List<Place> places,
                            UnaryOperator<String> shown) {
        if (muonConfigs.isEmpty()) {
            throw new IllegalArgumentException("muonConfigs must hold at least one group's config, got none");
        }
        Set<String> names = new HashSet<>();
        for (Place p : places) {
            if (!names.add(p.name())) {
                throw new IllegalArgumentException("entries must have distinct names; '" + shown.apply(p.name())
                        + "' appears twice");
            }
            if (p.optimizer() == OptimizerKind.MUON && p.group() >= muonConfigs.size()) {
                throw new IllegalArgumentException("'" + shown.apply(p.name()) + "' is in Muon group " + p.group()
                        + ", but there are " + muonConfigs.size() + " Muon group(s)");
            }
            if (p.optimizer() == OptimizerKind.ADAMW && p.tiedTo() == null && adamWConfig == null) {
                throw new IllegalArgumentException("'" + shown.apply(p.name()) + "' is on AdamW, but adamWConfig is "
                        + "null");
            }
            if (p.optimizer() == OptimizerKind.ADAMW && p.group() > 1) {
                throw new IllegalArgumentException("'" + shown.apply(p.name()) + "' is in AdamW group " + p.group()
                        + "; AdamW has group 0 (decayed) and 1 (no weight decay)");
            }
        }
        for (Place p : places) {
            if (p.tiedTo() != null && !names.contains(p.tiedTo())) {
                throw new IllegalArgumentException("'" + shown.apply(p.name()) + "' is tied to '"
                        + shown.apply(p.tiedTo()) + "', which is not an entry");
            }
        }
    }

    /**
     * The document's name of a dtype: libtorch's scalar type name, which the file holds.
     *
     * @param dtypeName {@code float64}, {@code float32}, {@code float16}, {@code bfloat16} or {@code int64}
     * @return {@code Double}, {@code Float}, {@code Half}, {@code BFloat16} or {@code Long}
     * @throws IllegalArgumentException for a dtype checkpoints do not hold
     */
    public static String documentDtype(String dtypeName) {
        TensorKind kind = TensorKind.ofDtypeName(dtypeName);
        if (kind == null) {
            throw new IllegalArgumentException("checkpoints hold float64, float32, float16, bfloat16 and int64 "
                    + "tensors, got " + dtypeName);
        }
        return kind.documentName();
    }

    /**
     * The parameter of a name.
     *
     * @param name the name
     * @return the parameter, if there is one
     */
    public Optional<Parameter> parameter(String name) {
        return parameters.stream().filter(p -> p.name().equals(name)).findFirst();
    }

    /**
     * The Muon state buffers a parameter's update keeps: those its Muon group's recipe declares, none for an AdamW
     * parameter or a tied name ({@link OptimizerState#declaredBuffers}).
     *
     * @param p the parameter
     * @return the declarations, in the recipe's order
     */
    public List<BufferSpec> declaredBuffers(Parameter p) {
        if (p.optimizer() != OptimizerKind.MUON || p.group() >= muonConfigs.size()) {
            return List.of();
        }
        return UpdateRecipe.of(muonConfigs.get(p.group())).buffers();
    }

    /**
     * The number of groups a schedule record covers: the Muon groups, and AdamW's when there is one.
     *
     * @return the group count
     */
    public int groupCount() {
        return muonConfigs.size() + (adamWConfig == null ? 0 : 1);
    }

    /** The document as the file holds it. */
    Map<String, Object> toJson() {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("step", step);
        List<Object> groups = new ArrayList<>();
        muonConfigs.forEach(c -> groups.add(ConfigFields.toJson(c, ConfigFields.MUON)));
        doc.put("muon_groups", groups);
        doc.put("adamw", adamWConfig == null ? null : ConfigFields.toJson(adamWConfig, ConfigFields.ADAMW));
        if (schedule == null) {
            doc.put("schedule", null);
        } else {
            Map<String, Object> record = new LinkedHashMap<>();
            List<Object> lrs = new ArrayList<>();
            for (double lr : schedule.initialLrs()) {
                lrs.add(lr);
            }
            record.put("initial_lrs", lrs);
            record.put("schedule", ScheduleEntries.toJson(schedule));
            doc.put("schedule", record);
        }
        List<Object> list = new ArrayList<>();
        for (Parameter s : parameters) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("name", s.name());
            p.put("optimizer", s.optimizer().name());
            p.put("group", (long) s.group());
            List<Object> shape = new ArrayList<>();
            for (long size : s.shape) {
                shape.add(size);
            }
            p.put("shape", shape);
            p.put("dtype", s.dtype());
            p.put("tied_to", s.tiedTo());
            p.put("row_split", s.rowSplit() == null ? null : RowSplitEntries.toMap(s.rowSplit()));
            p.put("adamw_step", s.adamWStep());
            list.add(p);
        }
        doc.put("parameters", list);
        return doc;
    }

    private static final Set<String> DOCUMENT_KEYS = Set.of("step", "muon_groups", "adamw", "schedule",
            "parameters");
    private static final Set<String> PARAMETER_KEYS = Set.of("name", "optimizer", "group", "shape", "dtype",
            "tied_to", "row_split", "adamw_step");
    private static final String DTYPES = "Double, Float, Half, BFloat16, Long";

    /**
     * A document from the file's JSON, every key and value checked.
     *
     * @throws FormatException         naming the entry and the rule
     * @throws IllegalArgumentException if the parts do not fit together (the constructor's rules)
     */
    static CheckpointDocument parse(Object json) {
        Map<String, Object> doc = object(json, "__metadata__.state", DOCUMENT_KEYS);
        long step = integer(doc.get("step"), "step");
        if (step < 0) {
            throw new FormatException("__metadata__.state.step", "must be >= 0, got " + step);
        }
        List<MuonConfig> muonConfigs = new ArrayList<>();
        List<Object> groups = array(doc.get("muon_groups"), "muon_groups");
        for (int g = 0; g < groups.size(); g++) {
            muonConfigs.add(config(groups.get(g), ConfigFields.MUON, MuonConfig.defaults(), "muon_groups[" + g
                    + "]"));
        }
        AdamWConfig adamWConfig = null;
        if (doc.get("adamw") != null) {
            adamWConfig = config(doc.get("adamw"), ConfigFields.ADAMW, AdamWConfig.defaults(), "adamw");
        }
        ScheduleRecord schedule = null;
        if (doc.get("schedule") != null) {
            Map<String, Object> s = object(doc.get("schedule"), "__metadata__.state.schedule",
                    Set.of("initial_lrs", "schedule"));
            List<Object> lrs = array(s.get("initial_lrs"), "schedule.initial_lrs");
            double[] values = new double[lrs.size()];
            for (int g = 0; g < values.length; g++) {
                values[g] = number(lrs.get(g), "schedule.initial_lrs[" + g + "]");
            }
            try {
                schedule = ScheduleEntries.fromJson(values, s.get("schedule"), "__metadata__.state.schedule"
                        + ".schedule");
            } catch (IllegalArgumentException e) {
                throw new FormatException("__metadata__.state.schedule", e.getMessage());
            }
        }
        List<Parameter> parameters = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        List<Object> list = array(doc.get("parameters"), "parameters");
        for (int i = 0; i < list.size(); i++) {
            String where = "__metadata__.state.parameters[" + i + "]";
            Map<String, Object> o = object(list.get(i), where, PARAMETER_KEYS);
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
            Object dtype = o.get("dtype");
            if (!(dtype instanceof String text) || TensorKind.ofDocumentName(text) == null) {
                throw new FormatException("__metadata__.state " + label + " dtype", "must be one of " + DTYPES
                        + ", got " + show(dtype));
            }
            Object tied = o.get("tied_to");
            if (tied != null && !(tied instanceof String)) {
                throw new FormatException(label + " tied_to", "must be null or a string");
            }
            RowSplit rowSplit = o.get("row_split") == null ? null
                    : RowSplitEntries.fromMap(o.get("row_split"), label + " row_split");
            Parameter p;
            try {
                p = new Parameter(name, optimizer, (int) Math.min(group, Integer.MAX_VALUE), shape, text,
                        (String) tied, rowSplit, null);
            } catch (IllegalArgumentException e) {
                throw new FormatException(label, e.getMessage());
            }
            if (!seen.add(name)) {
                throw new FormatException(label, "appears twice");
            }
            if (o.get("adamw_step") != null) {
                long adamWStep = integer(o.get("adamw_step"), label + " adamw_step");
                // Checked here, where the entry is known: AdamWMoments would refuse it later, as a bad argument.
                if (adamWStep < 0) {
                    throw new FormatException("__metadata__.state " + label + " adamw_step", "must be >= 0, got "
                            + adamWStep);
                }
                p = new Parameter(name, optimizer, p.group(), shape, text, (String) tied, rowSplit, adamWStep);
            }
            parameters.add(p);
        }
        return new CheckpointDocument(step, muonConfigs, adamWConfig, schedule, parameters);
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
        return Json.integer(json, "__metadata__.state " + where, CheckpointDocument::show);
    }

    private static double number(Object json, String where) {
        return Json.number(json, "__metadata__.state." + where, CheckpointDocument::show);
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
}
