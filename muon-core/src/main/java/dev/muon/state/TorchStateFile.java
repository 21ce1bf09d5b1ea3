package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.RowSplit;
import dev.muon.OptimizerKind;
import dev.muon.internal.AtomicFile;
import dev.muon.internal.FormatException;
import dev.muon.internal.Messages;
import dev.muon.internal.PickleValues;
import dev.muon.internal.TorchLoad;
import dev.muon.internal.TorchNatives;
import dev.muon.internal.TorchSave;
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
 * PyTorch's optimizer state file: an {@link OptimizerState} as the dict that Python's
 * {@code torch.load(f, weights_only=True)} returns, with a {@code torch.optim.Muon} state dict for the Muon groups
 * and a {@code torch.optim.AdamW} state dict for the AdamW groups (see {@code docs/checkpoints.md},
 * "PyTorch-compatible state"):
 * <pre>
 *   format       "dev.muon.torch_state_dict/1"
 *   param_names  [name of parameter 0, name of parameter 1, ...]     named_parameters() order, tied names left out
 *   step         the optimizer's step count
 *   muon         {"state": {i: {"momentum_buffer": T}}, "param_groups": [{lr, weight_decay, momentum, nesterov,
 *                 ns_coefficients, eps, ns_steps, adjust_lr_fn, muon_core_settings, params}]}
 *   adamw        {"state": {i: {"step": float32 scalar T, "exp_avg": T, "exp_avg_sq": T}}, "param_groups": [{lr,
 *                 betas, eps, weight_decay, amsgrad, maximize, foreach, capturable, differentiable, fused,
 *                 decoupled_weight_decay, params}]}
 * </pre>
 * Reading never runs anything from the file: the zip and its pickle go through a weights-only reader (an
 * allow-list of the tensor-rebuild function, {@code OrderedDict} and five storage types; everything else refused
 * by name), and every tensor is checked (its shape and dtype against the optimizer's parameter, its storage
 * record's length, its view's bounds) before libtorch sees its bytes. Like PyTorch's {@code load_state_dict}, a
 * read maps the file's parameter ids to the optimizer's parameters by position within the groups, so a file
 * written from Python's own optimizers (ids from 0 in each) reads as well as one written here. The file holds no
 * parameter values. Beside the settings {@code torch.optim} has, each Muon group carries muon-core's others under
 * {@code muon_core_settings} (Newton–Schulz precision and kernel, layouts, variants, by their checkpoint names),
 * which {@code torch.optim.Muon.load_state_dict} keeps and its step ignores; a file without them (PyTorch's own,
 * or written before they were carried) takes them from the optimizer's own state, the template.
 */
public final class TorchStateFile {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The format's name in the file. */
    public static final String FORMAT = "dev.muon.torch_state_dict/1";
    private static final String WHAT = "torch state dict";

    private static final Set<String> TOP_KEYS = Set.of("format", "param_names", "step", "muon", "adamw");
    /**
     * muon-core's keys beside torch.optim.Muon's: a group's NorMuon settings and row splits, a parameter's NorMuon
     * second moment. {@code torch.optim.Muon.load_state_dict} keeps them and its step ignores them.
     */
    static final String NORMUON_GROUP_KEY = "normuon";
    static final String ROW_SPLITS_KEY = "row_splits";
    static final String NORMUON_STATE_KEY = "normuon_second_moment";
    /**
     * A group's muon-core settings that {@code torch.optim.Muon} has no key for (its Newton–Schulz precision and
     * kernel, layouts, variants), by their names in muon-core's checkpoints ({@link ConfigFields}): so a file
     * carries every build setting, and an import into an optimizer built otherwise is refused, listing them. Files
     * without it (written before it existed, or by PyTorch) take these settings from the optimizer.
     */
    static final String SETTINGS_GROUP_KEY = "muon_core_settings";
    private static final Set<String> MUON_OPTIONAL_KEYS = Set.of(NORMUON_GROUP_KEY, ROW_SPLITS_KEY,
            SETTINGS_GROUP_KEY);
    /** The fields of a Muon config that torch.optim.Muon's own keys carry (or that an export refuses). */
    private static final Set<String> TORCH_MUON_FIELDS = Set.of("lr", "weightDecay", "momentum", "nesterov",
            "nsCoefficients", "eps", "nsSteps", "adjustLr", "extraScale");
    private static final Set<String> MUON_GROUP_KEYS = Set.of("lr", "weight_decay", "momentum", "nesterov",
            "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn", "params");
    private static final Set<String> ADAMW_GROUP_KEYS = Set.of("lr", "betas", "eps", "weight_decay", "params");
    /** Keys PyTorch versions add to an AdamW group that change nothing here, or must hold the value checked. */
    private static final Set<String> ADAMW_OPTIONAL_KEYS = Set.of("amsgrad", "maximize", "foreach", "capturable",
            "differentiable", "fused", "decoupled_weight_decay");
    /** Keys any PyTorch group may carry: LR schedulers add {@code initial_lr}, named parameters {@code param_names}. */
    private static final Set<String> ANY_GROUP_KEYS = Set.of("initial_lr", "param_names");

    private TorchStateFile() {
    }

    /**
     * The file's view of a state: the trained parameters by index (tied names left out), and each Muon and AdamW
     * group's indices.
     */
    private record Layout(List<ParameterEntry> entries, List<List<Integer>> muonGroups,
                          List<List<Integer>> adamWGroups) {
        static Layout of(OptimizerState state) {
            List<ParameterEntry> trained = state.entries().stream().filter(e -> !e.spec().isTied()).toList();
            List<List<Integer>> muon = new ArrayList<>();
            for (int g = 0; g < state.muonConfigs().size(); g++) {
                muon.add(indices(trained, OptimizerKind.MUON, g));
            }
            List<List<Integer>> adamW = new ArrayList<>();
            if (state.adamWConfig() != null) {
                adamW.add(indices(trained, OptimizerKind.ADAMW, 0));
                List<Integer> undecayed = indices(trained, OptimizerKind.ADAMW, 1);
                if (!undecayed.isEmpty()) {
                    adamW.add(undecayed);
                }
            }
            return new Layout(trained, muon, adamW);
        }

        private static List<Integer> indices(List<ParameterEntry> trained, OptimizerKind optimizer, int group) {
            List<Integer> out = new ArrayList<>();
            for (int i = 0; i < trained.size(); i++) {
                ParameterSpec s = trained.get(i).spec();
                if (s.optimizer() == optimizer && s.group() == group) {
                    out.add(i);
                }
            }
            return out;
        }

        List<String> names() {
            return entries.stream().map(ParameterEntry::name).toList();
        }
    }

    // ------------------------------------------------------------------ writing

    /**
     * Writes a state, replacing {@code file} atomically.
     *
     * @param file  the target
     * @param state the state (its parameter values are not written)
     * @throws IllegalStateException         if a Muon config has no {@code torch.optim.Muon} equivalent (a per-step
     *                                       coefficient schedule, {@code adjustLr} other than {@code ORIGINAL} or
     *                                       {@code MATCH_RMS_ADAMW}, {@code extraScale} other than 1); nothing is
     *                                       written
     * @throws UnsupportedOperationException if the state holds what {@code torch.optim.Muon} has no place for
     *                                       (NorMuon, row splits); nothing is written
     * @throws java.io.UncheckedIOException  if the file cannot be written; {@code file} is then unchanged
     */
    public static void write(Path file, OptimizerState state) {
        Map<String, Object> dict = toDict(state);
        AtomicFile.write(file, WHAT, channel -> TorchSave.write(dict, Channels.newOutputStream(channel)),
                AtomicFile.NEW_FILE);
    }

    /** The dict {@code torch.load} returns for a state. */
    static Map<String, Object> toDict(OptimizerState state) {
        Layout layout = Layout.of(state);
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("format", FORMAT);
        root.put("param_names", new ArrayList<Object>(layout.names()));
        root.put("step", state.step());
        Map<Object, Object> muonState = new LinkedHashMap<>();
        List<Object> muonGroups = new ArrayList<>();
        for (int g = 0; g < layout.muonGroups().size(); g++) {
            List<Integer> ids = layout.muonGroups().get(g);
            for (int id : ids) {
                ParameterEntry entry = layout.entries().get(id);
                Tensor buffer = entry.momentum();
                if (buffer != null) {
                    // torch.optim.Muon keeps the buffer in the parameter's dtype: a bfloat16 one is widened (exact).
                    Map<String, Object> s = new LinkedHashMap<>();
                    s.put("momentum_buffer", buffer.scalar_type().value == entry.spec().dtype().value ? buffer
                            : buffer.to(entry.spec().dtype()));
                    if (entry.secondMoment() != null) {
                        s.put(NORMUON_STATE_KEY, entry.secondMoment());
                    }
                    muonState.put((long) id, s);
                }
            }
            Map<String, Object> group = muonGroup(state.muonConfigs().get(g), g, ids);
            Map<String, Object> splits = new LinkedHashMap<>();
            for (int id : ids) {
                RowSplit split = layout.entries().get(id).spec().rowSplit();
                if (split != null) {
                    splits.put(layout.entries().get(id).name(), rowSplitDict(split));
                }
            }
            if (!splits.isEmpty()) {
                group.put(ROW_SPLITS_KEY, splits);
            }
            muonGroups.add(group);
        }
        root.put("muon", stateDict(muonState, muonGroups));
        if (state.adamWConfig() != null) {
            AdamWConfig c = state.adamWConfig();
            Map<Object, Object> adamWState = new LinkedHashMap<>();
            List<Object> adamWGroups = new ArrayList<>();
            for (int g = 0; g < layout.adamWGroups().size(); g++) {
                List<Integer> ids = layout.adamWGroups().get(g);
                for (int id : ids) {
                    AdamWMoments m = layout.entries().get(id).adamW();
                    if (m != null) {
                        Map<String, Object> s = new LinkedHashMap<>();
                        // PyTorch keeps AdamW's step as a float32 scalar tensor (since 1.12).
                        s.put("step", torch.scalar_tensor(new Scalar((double) m.step()),
                                new TensorOptions(torch.ScalarType.Float)));
                        s.put("exp_avg", m.expAvg());
                        s.put("exp_avg_sq", m.expAvgSq());
                        adamWState.put((long) id, s);
                    }
                }
                Map<String, Object> group = new LinkedHashMap<>();
                group.put("lr", c.lr());
                group.put("betas", PickleValues.Tuple.of(c.beta1(), c.beta2()));
                group.put("eps", c.eps());
                group.put("weight_decay", g == 0 ? c.weightDecay() : 0.0);
                group.put("amsgrad", false);
                group.put("maximize", false);
                group.put("foreach", null);
                group.put("capturable", false);
                group.put("differentiable", false);
                group.put("fused", null);
                // PyTorch 2.8+ runs AdamW as Adam with this flag, and a group that lacks it may load as Adam's L2
                // decay; older versions keep the key and ignore it.
                group.put("decoupled_weight_decay", true);
                group.put("params", longs(ids));
                adamWGroups.add(group);
            }
            root.put("adamw", stateDict(adamWState, adamWGroups));
        }
        return root;
    }

    private static Map<String, Object> stateDict(Map<Object, Object> state, List<Object> groups) {
        Map<String, Object> dict = new LinkedHashMap<>();
        dict.put("state", state);
        dict.put("param_groups", groups);
        return dict;
    }

    private static Map<String, Object> muonGroup(MuonConfig c, int g, List<Integer> ids) {
        if (!oneTriple(c.nsCoefficients())) {
            throw new IllegalStateException("Muon group " + g + " cannot be exported: nsCoefficients must be one "
                    + "(a, b, c) used at every step, as torch.optim.Muon's ns_coefficients is; got "
                    + c.nsCoefficients().name());
        }
        String adjust = switch (c.adjustLr()) {
            case ORIGINAL -> "original";
            case MATCH_RMS_ADAMW -> "match_rms_adamw";
            default -> throw new IllegalStateException("Muon group " + g + " cannot be exported: adjustLr "
                    + c.adjustLr() + " has no torch.optim.Muon adjust_lr_fn (it takes 'original' or "
                    + "'match_rms_adamw')");
        };
        if (c.extraScale() != 1.0) {
            throw new IllegalStateException("Muon group " + g + " cannot be exported: extraScale must be 1 "
                    + "(torch.optim.Muon has no such factor), got " + c.extraScale());
        }
        Coefficients abc = c.nsCoefficients().at(0);
        Map<String, Object> group = new LinkedHashMap<>();
        group.put("lr", c.lr());
        group.put("weight_decay", c.weightDecay());
        group.put("momentum", c.momentum());
        group.put("nesterov", c.nesterov());
        group.put("ns_coefficients", PickleValues.Tuple.of(abc.a(), abc.b(), abc.c()));
        group.put("eps", c.eps());
        group.put("ns_steps", (long) c.nsSteps());
        group.put("adjust_lr_fn", adjust);
        if (c.norMuon() != null) {
            Map<String, Object> norMuon = new LinkedHashMap<>();
            norMuon.put("beta2", c.norMuon().beta2());
            norMuon.put("eps", c.norMuon().eps());
            group.put(NORMUON_GROUP_KEY, norMuon);
        }
        Map<String, Object> settings = new LinkedHashMap<>(ConfigFields.toJson(c, ConfigFields.MUON));
        settings.keySet().removeAll(TORCH_MUON_FIELDS);
        group.put(SETTINGS_GROUP_KEY, settings);
        group.put("params", longs(ids));
        return group;
    }

    private static Map<String, Object> rowSplitDict(RowSplit split) {
        if (split.headDim() > 0) {
            return Map.of("per_head", (long) split.headDim());
        }
        List<Object> sizes = new ArrayList<>();
        for (int size : split.blockSizes()) {
            sizes.add((long) size);
        }
        return Map.of("split_rows", sizes);
    }

    /** Whether torch.optim.Muon's ns_coefficients can express a schedule: one triple, no norm safety factor. */
    private static boolean oneTriple(CoefficientSchedule schedule) {
        return schedule.repeating() && schedule.normalizationSafety() == 1.0;
    }

    private static List<Object> longs(List<Integer> ids) {
        List<Object> out = new ArrayList<>();
        ids.forEach(i -> out.add((long) i));
        return out;
    }

    // ------------------------------------------------------------------ reading

    /**
     * Reads a file for an optimizer whose own state is {@code template}: the file's parameter ids are mapped to the
     * template's parameters by position within the groups, every tensor is checked against its parameter's shape
     * and dtype, and the settings the file does not hold come from the template's configs.
     *
     * @param file     the file
     * @param template the optimizer's own state (its tensors are not used)
     * @return the file's state: the template's entries with the file's buffers (no values), the file's
     *         hyperparameters, its step count, and no schedule record; tensors are new CPU tensors of the caller's
     *         {@code PointerScope}
     * @throws StateFileException if the file is missing, not a {@code torch.save} file, asks to run anything, or
     *                            does not fit the template, naming the entry and the rule
     */
    public static OptimizerState read(Path file, OptimizerState template) {
        if (!Files.isRegularFile(file)) {
            throw new StateFileException(WHAT, file, "the file", "does not exist or is not a regular file", null);
        }
        try (TorchLoad load = TorchLoad.open(file)) {
            return new Reader(file, template, load).read(load.root());
        } catch (FormatException e) {
            throw new StateFileException(WHAT, file, e.entry(), e.rule(), e);
        } catch (NoSuchFileException e) {
            throw new StateFileException(WHAT, file, "the file", "does not exist", e);
        } catch (IOException e) {
            throw new StateFileException(WHAT, file, "the file", "cannot be read: " + e.getMessage(), e);
        }
    }

    /** One read: the template, its layout, the open file, and the file's name for the messages. */
    private static final class Reader {
        /** NorMuon second moments by parameter index, as the Muon part is read. */
        private final Map<Integer, Tensor> secondMoments = new HashMap<>();
        private final Path path;
        private final OptimizerState template;
        private final Layout expected;
        private final TorchLoad load;

        Reader(Path path, OptimizerState template, TorchLoad load) {
            this.path = path;
            this.template = template;
            this.expected = Layout.of(template);
            this.load = load;
        }

        private StateFileException fail(String entry, String rule) {
            return new StateFileException(WHAT, path, entry, rule, null);
        }

        OptimizerState read(Object rootObject) throws IOException {
            Map<String, Object> root = stringDict(rootObject, "the file");
            for (String key : root.keySet()) {
                if (!TOP_KEYS.contains(key)) {
                    throw fail("the file", "has an unknown top-level key '" + Messages.shortened(key)
                            + "' (expected " + sorted(TOP_KEYS) + ")");
                }
            }
            if (root.containsKey("format") && !FORMAT.equals(root.get("format"))) {
                throw fail("format", "must be '" + FORMAT + "', got " + show(root.get("format")));
            }
            checkNames(require(root, "param_names", "the file"));
            if (template.adamWConfig() == null && root.containsKey("adamw")) {
                throw fail("'adamw'", "is present, but this optimizer has no AdamW group");
            }
            Map<Integer, Tensor> momentum = new HashMap<>();
            List<MuonConfig> muonConfigs = readMuon(stringDict(require(root, "muon", "the file"), "'muon'"),
                    momentum);
            AdamWConfig adamWConfig = null;
            Map<Integer, AdamWMoments> adamW = new HashMap<>();
            if (template.adamWConfig() != null) {
                adamWConfig = readAdamW(stringDict(require(root, "adamw", "the file"), "'adamw'"), adamW);
            }
            long step;
            if (root.containsKey("step")) {
                Object s = root.get("step");
                if (!(s instanceof Long l) || l < 0) {
                    throw fail("step", "must be an int >= 0, got " + show(s));
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
                    out = out.withMomentum(momentum.get(index)).withSecondMoment(secondMoments.get(index))
                            .withAdamW(adamW.get(index));
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
                    throw fail("param_names[" + i + "]", "is " + show(names.get(i)) + ", this optimizer's parameter "
                            + i + " is '" + expected.names().get(i) + "'");
                }
            }
        }

        /** The Muon part; fills {@code momentum} by parameter index. */
        private List<MuonConfig> readMuon(Map<String, Object> dict, Map<Integer, Tensor> momentum)
                throws IOException {
            List<Map<String, Object>> groups = groups(dict, "muon", expected.muonGroups());
            Map<Long, Integer> ids = idMap(groups, "muon", expected.muonGroups());
            List<MuonConfig> configs = new ArrayList<>();
            for (int g = 0; g < groups.size(); g++) {
                String where = "muon.param_groups[" + g + "]";
                Map<String, Object> group = groups.get(g);
                checkGroupKeys(group, where, MUON_GROUP_KEYS, MUON_OPTIONAL_KEYS);
                checkRowSplits(group, where, expected.muonGroups().get(g));
                configs.add(muonConfig(group, where, template.muonConfigs().get(g)));
            }
            Map<Object, Object> state = dict(require(dict, "state", "'muon'"), "muon.state");
            for (Map.Entry<Object, Object> e : state.entrySet()) {
                int index = index(e.getKey(), ids, "muon");
                String where = "muon.state[" + e.getKey() + "]";
                Map<String, Object> s = stringDict(e.getValue(), where);
                for (String key : s.keySet()) {
                    if (!key.equals("momentum_buffer") && !key.equals(NORMUON_STATE_KEY)) {
                        throw fail(where, "has an unknown key '" + Messages.shortened(key) + "' (expected "
                                + "[momentum_buffer, " + NORMUON_STATE_KEY + "])");
                    }
                }
                momentum.put(index, tensor(require(s, "momentum_buffer", where), where + ".momentum_buffer",
                        index));
                if (s.containsKey(NORMUON_STATE_KEY)) {
                    secondMoments.put(index, secondMoment(s.get(NORMUON_STATE_KEY), where + "."
                            + NORMUON_STATE_KEY, index));
                }
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
            if (!oneTriple(schedule)) {
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
                        + show(adjust));
            }
            Object steps = group.get("ns_steps");
            if (!(steps instanceof Long n) || n < 1 || n > Integer.MAX_VALUE) {
                throw fail(where + ".ns_steps", "must be an int >= 1, got " + show(steps));
            }
            NorMuonConfig norMuon = null;
            if (group.containsKey(NORMUON_GROUP_KEY)) {
                Map<String, Object> nor = stringDict(group.get(NORMUON_GROUP_KEY), where + "." + NORMUON_GROUP_KEY);
                try {
                    norMuon = new NorMuonConfig(number(require(nor, "beta2", where + "." + NORMUON_GROUP_KEY),
                            where + "." + NORMUON_GROUP_KEY + ".beta2"), number(require(nor, "eps",
                            where + "." + NORMUON_GROUP_KEY), where + "." + NORMUON_GROUP_KEY + ".eps"));
                } catch (IllegalArgumentException e) {
                    throw fail(where + "." + NORMUON_GROUP_KEY, e.getMessage());
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
            return group.containsKey(SETTINGS_GROUP_KEY)
                    ? settings(group.get(SETTINGS_GROUP_KEY), where + "." + SETTINGS_GROUP_KEY, fromTorchKeys)
                    : fromTorchKeys;
        }

        /**
         * {@code current} with the file's muon-core settings ({@link #SETTINGS_GROUP_KEY}): every key one of
         * {@code ConfigFields}' that torch.optim.Muon has no key for, each checked as a checkpoint's is.
         */
        private MuonConfig settings(Object value, String where, MuonConfig current) {
            Map<String, Object> file = stringDict(value, where);
            for (String key : file.keySet()) {
                if (TORCH_MUON_FIELDS.contains(key)
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
                checkGroupKeys(group, where, ADAMW_GROUP_KEYS, ADAMW_OPTIONAL_KEYS);
                for (String off : List.of("amsgrad", "maximize")) {
                    if (group.containsKey(off) && !Boolean.FALSE.equals(group.get(off))) {
                        throw fail(where + "." + off, "must be False (libtorch's AdamW here runs without it), got "
                                + show(group.get(off)));
                    }
                }
                if (group.containsKey("decoupled_weight_decay")
                        && !Boolean.TRUE.equals(group.get("decoupled_weight_decay"))) {
                    throw fail(where + ".decoupled_weight_decay", "must be True (AdamW), got "
                            + show(group.get("decoupled_weight_decay")));
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
                        throw fail(where, "has an unknown key '" + key + "' (expected [exp_avg, exp_avg_sq, "
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
                throw fail(where, "must be a scalar tensor or a number, got " + show(value));
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
                    throw fail("'" + part + "'", "has an unknown key '" + key + "' (expected [param_groups, state])");
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
                        throw fail(where + "[" + j + "]", "must be an int, got " + show(params.get(j)));
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
                throw fail(part + ".state", "has an entry for " + show(key) + ", which is no parameter id of "
                        + part + ".param_groups " + sorted(ids.keySet()));
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
                if (!required.contains(key) && !optional.contains(key) && !ANY_GROUP_KEYS.contains(key)) {
                    throw fail(where, "has an unknown key '" + key + "' (expected " + sorted(required) + ")");
                }
            }
        }

        /** A state tensor of the parameter's shape and dtype, checked before its bytes are read. */
        private Tensor tensor(Object value, String where, int index) throws IOException {
            if (!(value instanceof PickleValues.TensorRef ref)) {
                throw fail(where, "must be a tensor, got " + show(value));
            }
            ParameterSpec spec = expected.entries().get(index).spec();
            if (!Arrays.equals(ref.size(), spec.shape())) {
                throw fail(where, "has shape " + Messages.shortened(ref.size()) + ", parameter '" + spec.name()
                        + "' has " + Arrays.toString(spec.shape()));
            }
            if (ref.storage().kind().scalarType().value != spec.dtype().value) {
                throw fail(where, "has dtype " + ref.storage().kind().scalarType() + ", parameter '" + spec.name()
                        + "' has " + spec.dtype());
            }
            return load.tensor(ref, where);
        }

        /**
         * A group's row splits, where the file has them, must be this optimizer's: a file from Python has none,
         * and the momentum it holds is the whole matrix's either way.
         */
        private void checkRowSplits(Map<String, Object> group, String where, List<Integer> mine) {
            if (!group.containsKey(ROW_SPLITS_KEY)) {
                return;
            }
            Map<String, Object> splits = stringDict(group.get(ROW_SPLITS_KEY), where + "." + ROW_SPLITS_KEY);
            Map<String, RowSplit> expectedSplits = new LinkedHashMap<>();
            for (int index : mine) {
                ParameterSpec spec = expected.entries().get(index).spec();
                if (spec.rowSplit() != null) {
                    expectedSplits.put(spec.name(), spec.rowSplit());
                }
            }
            for (String name : splits.keySet()) {
                if (!expectedSplits.containsKey(name)) {
                    throw fail(where + "." + ROW_SPLITS_KEY + "['" + Messages.shortened(name) + "']",
                            "is set, but this optimizer has no row split for it");
                }
            }
            for (Map.Entry<String, RowSplit> e : expectedSplits.entrySet()) {
                String at = where + "." + ROW_SPLITS_KEY + "['" + e.getKey() + "']";
                Map<String, Object> split = stringDict(require(splits, e.getKey(), where + "." + ROW_SPLITS_KEY),
                        at);
                if (!split.equals(rowSplitDict(e.getValue()))) {
                    throw fail(at, "is " + Messages.shortened(split) + ", this optimizer's is "
                            + e.getValue());
                }
            }
        }

        /** NorMuon's second moment of a parameter: its shape and dtype checked before its bytes are read. */
        private Tensor secondMoment(Object value, String where, int index) throws IOException {
            if (!(value instanceof PickleValues.TensorRef ref)) {
                throw fail(where, "must be a tensor, got " + show(value));
            }
            ParameterSpec spec = expected.entries().get(index).spec();
            long[] shape = spec.secondMomentShape();
            if (!Arrays.equals(ref.size(), shape)
                    || ref.storage().kind().scalarType().value != ParameterSpec.secondMomentDtype(spec.dtype()).value) {
                throw fail(where, "has shape " + Messages.shortened(ref.size()) + " and dtype "
                        + ref.storage().kind().scalarType() + ", parameter '" + spec.name() + "''s has "
                        + Arrays.toString(shape) + " and " + ParameterSpec.secondMomentDtype(spec.dtype()));
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
            throw fail(where, "must be a number, got " + show(value));
        }

        private double[] numbers(Object value, int count, String where) {
            List<Object> items;
            if (value instanceof PickleValues.Tuple t) {
                items = t.items();
            } else if (value instanceof List<?> l) {
                items = new ArrayList<>(l);
            } else {
                throw fail(where, "must be a tuple of " + count + " numbers, got " + show(value));
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
            throw fail(where, "must be True or False, got " + show(value));
        }

        private Object require(Map<String, Object> dict, String key, String where) {
            if (!dict.containsKey(key)) {
                throw fail(where, "has no '" + key + "'");
            }
            return dict.get(key);
        }

        private Map<Object, Object> dict(Object value, String where) {
            if (!(value instanceof Map<?, ?> map)) {
                throw fail(where, "must be a dict, got " + show(value));
            }
            return new LinkedHashMap<>(map);
        }

        private Map<String, Object> stringDict(Object value, String where) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<Object, Object> e : dict(value, where).entrySet()) {
                if (!(e.getKey() instanceof String key)) {
                    throw fail(where, "has a key that is not a string: " + show(e.getKey()));
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
            throw fail(where, "must be a list, got " + show(value));
        }
    }

    private static String show(Object value) {
        if (value == null) {
            return "None";
        }
        if (value instanceof String s) {
            return "'" + Messages.shortened(s) + "'";
        }
        if (value instanceof PickleValues.TensorRef t) {
            return "a tensor of shape " + Messages.shortened(t.size());
        }
        if (value instanceof PickleValues.Tuple) {
            return "a tuple";
        }
        if (value instanceof Map<?, ?>) {
            return "a dict";
        }
        if (value instanceof List<?>) {
            return "a list";
        }
        return Messages.shortened(String.valueOf(value));
    }

    private static <T extends Comparable<T>> List<T> sorted(Set<T> set) {
        List<T> out = new ArrayList<>(new HashSet<>(set));
        out.sort(null);
        return out;
    }
}
