package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.BufferSpec;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.RowSplit;
import dev.muon.OptimizerKind;
import dev.muon.UpdateRecipe;
import dev.muon.internal.Messages;
import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One read of a {@link TorchStateFile}: the template (the optimizer's own state), its layout, the open file, and the
 * file's name for the messages. Runs nothing from the file and checks every tensor before its bytes are read.
 */
final class TorchStateReader {
    private final Path path;
    private final OptimizerState template;
    private final TorchStateFormat.Layout expected;
    private final TorchLoad load;

    TorchStateReader(Path path, OptimizerState template, TorchLoad load) {
        this.path = path;
        this.template = template;
        this.expected = TorchStateFormat.Layout.of(template);
        this.load = load;
    }

    private StateFileException fail(String entry, String rule) {
        return new StateFileException(TorchStateFormat.WHAT, path, entry, rule, null);
    }

    OptimizerState read(Object rootObject) throws IOException {
        Map<String, Object> root = stringDict(rootObject, "the file");
        for (String key : root.keySet()) {
            if (!TorchStateFormat.TOP_KEYS.contains(key)) {
                throw fail("the file", "has an unknown top-level key '" + Messages.shortened(key)
                        + "' (expected " + TorchStateFormat.sorted(TorchStateFormat.TOP_KEYS) + ")");
            }
        }
        if (root.containsKey("format") && !TorchStateFormat.FORMAT.equals(root.get("format"))) {
            throw fail("format", "must be '" + TorchStateFormat.FORMAT + "', got " + TorchStateFormat.show(root.get("format")));
        }
        checkNames(require(root, "param_names", "the file"));
        if (template.adamWConfig() == null && root.containsKey("adamw")) {
            throw fail("'adamw'", "is present, but this optimizer has no AdamW group");
        }
        Map<Integer, Map<String, Tensor>> buffers = new HashMap<>();
        List<MuonConfig> muonConfigs = readMuon(stringDict(require(root, "muon", "the file"), "'muon'"),
                buffers);
        AdamWConfig adamWConfig = null;
        Map<Integer, AdamWMoments> adamW = new HashMap<>();
        if (template.adamWConfig() != null) {
            adamWConfig = readAdamW(stringDict(require(root, "adamw", "the file"), "'adamw'"), adamW);
        }
        long step;
        if (root.containsKey("step")) {
            Object s = root.get("step");
            if (!(s instanceof Long l) || l < 0) {
                throw fail("step", "must be an int >= 0, got " + TorchStateFormat.show(s));
            }
            step = l;
        } else {
            // A file written from Python's optimizers alone: AdamW counts updates per parameter.
            step = adamW.values().stream().mapToLong(AdamWMoments::step).max().orElse(0);
        }
        List<ParameterEntry> entries = new ArrayList<>();
        int index = 0;
        for (ParameterEntry e : template.entries()) {
            ParameterEntry out = ParameterEntry.of(e.spec());
            if (!e.spec().isTied()) {
                for (Map.Entry<String, Tensor> b : buffers.getOrDefault(index, Map.of()).entrySet()) {
                    out = out.withBuffer(b.getKey(), b.getValue());
                }
                out = out.withAdamW(adamW.get(index));
                index++;
            }
            entries.add(out);
        }
        return new OptimizerState(step, muonConfigs, adamWConfig, entries, null);
    }

    private void checkNames(Object value) {
        List<Object> names = list(value, "param_names");
        if (names.size() != expected.names().size()) {
            throw fail("param_names", "holds " + names.size() + " names, this optimizer trains "
                    + expected.names().size() + " parameters " + expected.names());
        }
        for (int i = 0; i < names.size(); i++) {
            if (!expected.names().get(i).equals(names.get(i))) {
                throw fail("param_names[" + i + "]", "is " + TorchStateFormat.show(names.get(i)) + ", this optimizer's parameter "
                        + i + " is '" + expected.names().get(i) + "'");
            }
        }
    }

    /** The Muon part; fills {@code buffers} by parameter index, each parameter's by key. */
    private List<MuonConfig> readMuon(Map<String, Object> dict, Map<Integer, Map<String, Tensor>> buffers)
            throws IOException {
        List<Map<String, Object>> groups = groups(dict, "muon", expected.muonGroups());
        Map<Long, Integer> ids = idMap(groups, "muon", expected.muonGroups());
        List<MuonConfig> configs = new ArrayList<>();
        for (int g = 0; g < groups.size(); g++) {
            String where = "muon.param_groups[" + g + "]";
            Map<String, Object> group = groups.get(g);
            checkGroupKeys(group, where, TorchStateFormat.MUON_GROUP_KEYS, TorchStateFormat.MUON_OPTIONAL_KEYS);
            checkRowSplits(group, where, expected.muonGroups().get(g));
            configs.add(muonConfig(group, where, template.muonConfigs().get(g)));
        }
        Map<Object, Object> state = dict(require(dict, "state", "'muon'"), "muon.state");
        for (Map.Entry<Object, Object> e : state.entrySet()) {
            int index = index(e.getKey(), ids, "muon");
            String where = "muon.state[" + e.getKey() + "]";
            Map<String, Object> s = stringDict(e.getValue(), where);
            ParameterSpec spec = expected.entries().get(index).spec();
            // What the file's own settings declare for the parameter: a buffer of other settings is then one
            // of the differences StateFit lists.
            List<BufferSpec> declared = UpdateRecipe.of(configs.get(spec.group())).buffers();
            List<String> torchKeys = declared.stream().map(BufferSpec::torchKey).toList();
            for (String key : s.keySet()) {
                if (!torchKeys.contains(key)) {
                    throw fail(where, "has an unknown key '" + Messages.shortened(key) + "' (expected "
                            + torchKeys + ")");
                }
            }
            if (s.isEmpty()) {
                throw fail(where, "holds no buffer (expected " + torchKeys + ")");
            }
            Map<String, Tensor> read = new LinkedHashMap<>();
            for (BufferSpec d : declared) {
                if (s.containsKey(d.torchKey())) {
                    read.put(d.key(), buffer(s.get(d.torchKey()), where + "." + d.torchKey(), spec, d));
                }
            }
            buffers.put(index, read);
        }
        return configs;
    }

    private MuonConfig muonConfig(Map<String, Object> group, String where, MuonConfig current) {
        double[] abc = numbers(group.get("ns_coefficients"), 3, where + ".ns_coefficients");
        Coefficients coefficients;
        try {
            coefficients = new Coefficients(abc[0], abc[1], abc[2]);
        } catch (IllegalArgumentException e) {
            // NaN or infinite a, b or c (found by FileReadersFuzzTest): the file's fault, named as such.
            throw fail(where + ".ns_coefficients", "must hold finite numbers, got (" + abc[0] + ", " + abc[1]
                    + ", " + abc[2] + ")");
        }
        CoefficientSchedule schedule = current.nsCoefficients();
        if (!TorchStateFormat.oneTriple(schedule)) {
            throw fail(where + ".ns_coefficients", "cannot replace this optimizer's per-step schedule "
                    + schedule.name() + " (torch.optim.Muon has one (a, b, c) for every step)");
        }
        if (!schedule.at(0).equals(coefficients)) {
            schedule = CoefficientSchedule.constant(coefficients);
        }
        Object adjust = group.get("adjust_lr_fn");
        AdjustLr adjustLr;
        if (adjust == null || "original".equals(adjust)) {
            adjustLr = AdjustLr.ORIGINAL;
        } else if ("match_rms_adamw".equals(adjust)) {
            adjustLr = AdjustLr.MATCH_RMS_ADAMW;
        } else {
            throw fail(where + ".adjust_lr_fn", "must be None, 'original' or 'match_rms_adamw', got "
                    + TorchStateFormat.show(adjust));
        }
        Object steps = group.get("ns_steps");
        if (!(steps instanceof Long n) || n < 1 || n > Integer.MAX_VALUE) {
            throw fail(where + ".ns_steps", "must be an int >= 1, got " + TorchStateFormat.show(steps));
        }
        NorMuonConfig norMuon = null;
        if (group.containsKey(TorchStateFormat.NORMUON_GROUP_KEY)) {
            Map<String, Object> nor = stringDict(group.get(TorchStateFormat.NORMUON_GROUP_KEY), where + "." + TorchStateFormat.NORMUON_GROUP_KEY);
            try {
                norMuon = new NorMuonConfig(number(require(nor, "beta2", where + "." + TorchStateFormat.NORMUON_GROUP_KEY),
                        where + "." + TorchStateFormat.NORMUON_GROUP_KEY + ".beta2"), number(require(nor, "eps",
                        where + "." + TorchStateFormat.NORMUON_GROUP_KEY), where + "." + TorchStateFormat.NORMUON_GROUP_KEY + ".eps"));
            } catch (IllegalArgumentException e) {
                throw fail(where + "." + TorchStateFormat.NORMUON_GROUP_KEY, e.getMessage());
            }
        }
        MuonConfig fromTorchKeys;
        try {
            fromTorchKeys = current.withNorMuon(norMuon).withNsCoefficients(schedule)
                    .withNsSteps((int) (long) n)
                    .withLr(number(group.get("lr"), where + ".lr"))
                    .withWeightDecay(number(group.get("weight_decay"), where + ".weight_decay"))
                    .withMomentum(number(group.get("momentum"), where + ".momentum"))
                    .withNesterov(bool(group.get("nesterov"), where + ".nesterov"))
                    .withEps(number(group.get("eps"), where + ".eps"))
                    .withAdjustLr(adjustLr);
        } catch (IllegalArgumentException e) {
            throw fail(where, e.getMessage());
        }
        // muon-core's own settings last: they take precedence over the older "normuon" key.
        return group.containsKey(TorchStateFormat.SETTINGS_GROUP_KEY)
                ? settings(group.get(TorchStateFormat.SETTINGS_GROUP_KEY), where + "." + TorchStateFormat.SETTINGS_GROUP_KEY, fromTorchKeys)
                : fromTorchKeys;
    }

    /**
     * {@code current} with the file's muon-core settings ({@link #TorchStateFormat.SETTINGS_GROUP_KEY}): every key one of
     * {@code ConfigFields}' that torch.optim.Muon has no key for, each checked as a checkpoint's is.
     */
    private MuonConfig settings(Object value, String where, MuonConfig current) {
        Map<String, Object> file = stringDict(value, where);
        for (String key : file.keySet()) {
            if (TorchStateFormat.TORCH_MUON_FIELDS.contains(key)
                    || ConfigFields.MUON.stream().noneMatch(f -> f.key().equals(key))) {
                throw fail(where, "has an unknown key '" + Messages.shortened(key) + "'");
            }
        }
        Map<String, Object> merged = new LinkedHashMap<>(ConfigFields.toJson(current, ConfigFields.MUON));
        merged.putAll(file);
        try {
            return ConfigFields.fromJson(merged, ConfigFields.MUON, current);
        } catch (IllegalArgumentException e) {
            throw fail(where, e.getMessage());
        }
    }

    /** The AdamW part; fills {@code moments} by parameter index. */
    private AdamWConfig readAdamW(Map<String, Object> dict, Map<Integer, AdamWMoments> moments)
            throws IOException {
        List<Map<String, Object>> groups = groups(dict, "adamw", expected.adamWGroups());
        Map<Long, Integer> ids = idMap(groups, "adamw", expected.adamWGroups());
        AdamWConfig config = null;
        for (int g = 0; g < groups.size(); g++) {
            String where = "adamw.param_groups[" + g + "]";
            Map<String, Object> group = groups.get(g);
            checkGroupKeys(group, where, TorchStateFormat.ADAMW_GROUP_KEYS, TorchStateFormat.ADAMW_OPTIONAL_KEYS);
            for (String off : List.of("amsgrad", "maximize")) {
                if (group.containsKey(off) && !Boolean.FALSE.equals(group.get(off))) {
                    throw fail(where + "." + off, "must be False (libtorch's AdamW here runs without it), got "
                            + TorchStateFormat.show(group.get(off)));
                }
            }
            if (group.containsKey("decoupled_weight_decay")
                    && !Boolean.TRUE.equals(group.get("decoupled_weight_decay"))) {
                throw fail(where + ".decoupled_weight_decay", "must be True (AdamW), got "
                        + TorchStateFormat.show(group.get("decoupled_weight_decay")));
            }
            double lr = number(group.get("lr"), where + ".lr");
            double[] betas = numbers(group.get("betas"), 2, where + ".betas");
            double eps = number(group.get("eps"), where + ".eps");
            double decay = number(group.get("weight_decay"), where + ".weight_decay");
            if (g == 0) {
                try {
                    config = new AdamWConfig(lr, betas[0], betas[1], eps, decay);
                } catch (IllegalArgumentException e) {
                    throw fail(where, e.getMessage());
                }
            } else {
                // One AdamWConfig serves both groups; the second differs only by having no decay.
                if (lr != config.lr() || betas[0] != config.beta1() || betas[1] != config.beta2()
                        || eps != config.eps()) {
                    throw fail(where, "must have group 0's lr, betas and eps (" + config.lr() + ", ("
                            + config.beta1() + ", " + config.beta2() + "), " + config.eps() + "), got " + lr
                            + ", (" + betas[0] + ", " + betas[1] + "), " + eps);
                }
                if (decay != 0.0) {
                    throw fail(where + ".weight_decay", "must be 0 (the group of parameters below 2-D that "
                            + "noWeightDecayBelow2D keeps undecayed), got " + decay);
                }
            }
        }
        Map<Object, Object> state = dict(require(dict, "state", "'adamw'"), "adamw.state");
        for (Map.Entry<Object, Object> e : state.entrySet()) {
            int index = index(e.getKey(), ids, "adamw");
            String where = "adamw.state[" + e.getKey() + "]";
            Map<String, Object> s = stringDict(e.getValue(), where);
            for (String key : s.keySet()) {
                if (!Set.of("step", "exp_avg", "exp_avg_sq").contains(key)) {
                    throw fail(where, "has an unknown key '" + Messages.shortened(key) + "' (expected [exp_avg, exp_avg_sq, "
                            + "step]" + (key.equals("max_exp_avg_sq") ? "; amsgrad is not supported" : "")
                            + ")");
                }
            }
            long step = adamWStep(require(s, "step", where), where + ".step");
            Tensor expAvg = tensor(require(s, "exp_avg", where), where + ".exp_avg", index);
            Tensor expAvgSq = tensor(require(s, "exp_avg_sq", where), where + ".exp_avg_sq", index);
            moments.put(index, new AdamWMoments(expAvg, expAvgSq, step));
        }
        return config;
    }

    private long adamWStep(Object value, String where) throws IOException {
        double step;
        if (value instanceof PickleValues.TensorRef ref) {
            long elements = 1;
            for (long size : ref.size()) {
                elements *= size;
            }
            if (ref.size().length > 1 || elements != 1) {
                throw fail(where, "must be a scalar tensor, got shape " + Messages.shortened(ref.size()));
            }
            step = load.tensor(ref, where).item_double();
        } else if (value instanceof Long || value instanceof Double) {
            step = ((Number) value).doubleValue();
        } else {
            throw fail(where, "must be a scalar tensor or a number, got " + TorchStateFormat.show(value));
        }
        if (!(step >= 0) || step != Math.rint(step) || step > (double) (1L << 53)) {
            throw fail(where, "must be a whole number >= 0, got " + step);
        }
        return (long) step;
    }

    /** The groups of one part, as many as expected, each with as many params as expected. */
    private List<Map<String, Object>> groups(Map<String, Object> dict, String part,
                                             List<List<Integer>> expectedGroups) {
        for (String key : dict.keySet()) {
            if (!key.equals("state") && !key.equals("param_groups")) {
                throw fail("'" + part + "'", "has an unknown key '" + Messages.shortened(key)
                        + "' (expected [param_groups, state])");
            }
        }
        List<Object> raw = list(require(dict, "param_groups", "'" + part + "'"), part + ".param_groups");
        if (raw.size() != expectedGroups.size()) {
            throw fail(part + ".param_groups", "holds " + raw.size() + " group(s), this optimizer has "
                    + expectedGroups.size());
        }
        List<Map<String, Object>> groups = new ArrayList<>();
        for (int g = 0; g < raw.size(); g++) {
            groups.add(stringDict(raw.get(g), part + ".param_groups[" + g + "]"));
        }
        return groups;
    }

    /** The file's parameter ids to this optimizer's indices, by position within the groups (as PyTorch does). */
    private Map<Long, Integer> idMap(List<Map<String, Object>> groups, String part,
                                     List<List<Integer>> expectedGroups) {
        Map<Long, Integer> ids = new HashMap<>();
        for (int g = 0; g < groups.size(); g++) {
            String where = part + ".param_groups[" + g + "].params";
            List<Object> params = list(require(groups.get(g), "params", part + ".param_groups[" + g + "]"),
                    where);
            List<Integer> mine = expectedGroups.get(g);
            if (params.size() != mine.size()) {
                throw fail(where, "holds " + params.size() + " parameter(s), this optimizer's group holds "
                        + mine.size() + " " + namesOf(mine));
            }
            for (int j = 0; j < params.size(); j++) {
                if (!(params.get(j) instanceof Long id)) {
                    throw fail(where + "[" + j + "]", "must be an int, got " + TorchStateFormat.show(params.get(j)));
                }
                if (ids.put(id, mine.get(j)) != null) {
                    throw fail(where, "repeats parameter id " + id);
                }
            }
            if (groups.get(g).containsKey("param_names")) {
                List<Object> names = list(groups.get(g).get("param_names"), where.replace(".params",
                        ".param_names"));
                if (!names.equals(new ArrayList<Object>(namesOf(mine)))) {
                    throw fail(part + ".param_groups[" + g + "].param_names", "is "
                            + Messages.shortened(names) + ", this optimizer's "
                            + "group holds " + namesOf(mine));
                }
            }
        }
        return ids;
    }

    private List<String> namesOf(List<Integer> indices) {
        List<String> names = new ArrayList<>();
        indices.forEach(i -> names.add(expected.names().get(i)));
        return names;
    }

    private int index(Object key, Map<Long, Integer> ids, String part) {
        if (!(key instanceof Long id) || !ids.containsKey(id)) {
            throw fail(part + ".state", "has an entry for " + TorchStateFormat.show(key) + ", which is no parameter id of "
                    + part + ".param_groups " + TorchStateFormat.sorted(ids.keySet()));
        }
        return ids.get(id);
    }

    private void checkGroupKeys(Map<String, Object> group, String where, Set<String> required,
                                Set<String> optional) {
        for (String key : required) {
            if (!group.containsKey(key)) {
                throw fail(where, "has no '" + key + "'");
            }
        }
        for (String key : group.keySet()) {
            if (!required.contains(key) && !optional.contains(key) && !TorchStateFormat.ANY_GROUP_KEYS.contains(key)) {
                throw fail(where, "has an unknown key '" + Messages.shortened(key) + "' (expected "
                        + TorchStateFormat.sorted(required) + ")");
            }
        }
    }

    /** A state tensor of the parameter's shape and dtype, checked before its bytes are read. */
    private Tensor tensor(Object value, String where, int index) throws IOException {
        if (!(value instanceof PickleValues.TensorRef ref)) {
            throw fail(where, "must be a tensor, got " + TorchStateFormat.show(value));
        }
        ParameterSpec spec = expected.entries().get(index).spec();
        if (!Arrays.equals(ref.size(), spec.shape())) {
            throw fail(where, "has shape " + Messages.shortened(ref.size()) + ", parameter '" + spec.name()
                    + "' has " + Arrays.toString(spec.shape()));
        }
        if (TensorBytes.scalarType(ref.storage().kind()).value != spec.dtype().value) {
            throw fail(where, "has dtype " + TensorBytes.scalarType(ref.storage().kind()) + ", parameter '" + spec.name()
                    + "' has " + spec.dtype());
        }
        return load.tensor(ref, where);
    }

    /**
     * A group's row splits, where the file has them, must be this optimizer's: a file from Python has none,
     * and the momentum it holds is the whole matrix's either way.
     */
    private void checkRowSplits(Map<String, Object> group, String where, List<Integer> mine) {
        if (!group.containsKey(TorchStateFormat.ROW_SPLITS_KEY)) {
            return;
        }
        Map<String, Object> splits = stringDict(group.get(TorchStateFormat.ROW_SPLITS_KEY), where + "." + TorchStateFormat.ROW_SPLITS_KEY);
        Map<String, RowSplit> expectedSplits = new LinkedHashMap<>();
        for (int index : mine) {
            ParameterSpec spec = expected.entries().get(index).spec();
            if (spec.rowSplit() != null) {
                expectedSplits.put(spec.name(), spec.rowSplit());
            }
        }
        for (String name : splits.keySet()) {
            if (!expectedSplits.containsKey(name)) {
                throw fail(where + "." + TorchStateFormat.ROW_SPLITS_KEY + "['" + Messages.shortened(name) + "']",
                        "is set, but this optimizer has no row split for it");
            }
        }
        for (Map.Entry<String, RowSplit> e : expectedSplits.entrySet()) {
            String at = where + "." + TorchStateFormat.ROW_SPLITS_KEY + "['" + e.getKey() + "']";
            Map<String, Object> split = stringDict(require(splits, e.getKey(), where + "." + TorchStateFormat.ROW_SPLITS_KEY),
                    at);
            if (!split.equals(RowSplitEntries.toMap(e.getValue()))) {
                throw fail(at, "is " + Messages.shortened(split) + ", this optimizer's is "
                        + e.getValue());
            }
        }
    }

    /**
     * A declared Muon state buffer of a parameter: its shape and dtype checked against the declaration before its
     * bytes are read (a buffer stored in bfloat16 may come in the parameter's dtype, as PyTorch keeps it).
     */
    private Tensor buffer(Object value, String where, ParameterSpec spec, BufferSpec declared)
            throws IOException {
        if (!(value instanceof PickleValues.TensorRef ref)) {
            throw fail(where, "must be a tensor, got " + TorchStateFormat.show(value));
        }
        long[] shape = spec.shapeOf(declared);
        torch.ScalarType held = TensorBytes.scalarType(ref.storage().kind());
        String whose = "parameter '" + spec.name() + "''s " + declared.label();
        if (!Arrays.equals(ref.size(), shape)) {
            throw fail(where, "has shape " + Messages.shortened(ref.size()) + ", " + whose + " has "
                    + Arrays.toString(shape));
        }
        if (!spec.accepts(declared, held)) {
            throw fail(where, "has dtype " + held + ", " + whose + " has " + spec.dtypeOf(declared));
        }
        return load.tensor(ref, where);
    }

    private double number(Object value, String where) {
        if (value instanceof Double d) {
            return d;
        }
        if (value instanceof Long l) {
            return l;
        }
        throw fail(where, "must be a number, got " + TorchStateFormat.show(value));
    }

    private double[] numbers(Object value, int count, String where) {
        List<Object> items;
        if (value instanceof PickleValues.Tuple t) {
            items = t.items();
        } else if (value instanceof List<?> l) {
            items = new ArrayList<>(l);
        } else {
            throw fail(where, "must be a tuple of " + count + " numbers, got " + TorchStateFormat.show(value));
        }
        if (items.size() != count) {
            throw fail(where, "must hold " + count + " numbers, got " + items.size());
        }
        double[] out = new double[count];
        for (int i = 0; i < count; i++) {
            out[i] = number(items.get(i), where + "[" + i + "]");
        }
        return out;
    }

    private boolean bool(Object value, String where) {
        if (value instanceof Boolean b) {
            return b;
        }
        throw fail(where, "must be True or False, got " + TorchStateFormat.show(value));
    }

    private Object require(Map<String, Object> dict, String key, String where) {
        if (!dict.containsKey(key)) {
            throw fail(where, "has no '" + key + "'");
        }
        return dict.get(key);
    }

    private Map<Object, Object> dict(Object value, String where) {
        if (!(value instanceof Map<?, ?> map)) {
            throw fail(where, "must be a dict, got " + TorchStateFormat.show(value));
        }
        return new LinkedHashMap<>(map);
    }

    private Map<String, Object> stringDict(Object value, String where) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<Object, Object> e : dict(value, where).entrySet()) {
            if (!(e.getKey() instanceof String key)) {
                throw fail(where, "has a key that is not a string: " + TorchStateFormat.show(e.getKey()));
            }
            out.put(key, e.getValue());
        }
        return out;
    }

    private List<Object> list(Object value, String where) {
        if (value instanceof List<?> l) {
            return new ArrayList<>(l);
        }
        if (value instanceof PickleValues.Tuple t) {
            return t.items();
        }
        throw fail(where, "must be a list, got " + TorchStateFormat.show(value));
    }
}
