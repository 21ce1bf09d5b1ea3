package dev.muon.state;

import dev.muon.BufferSpec;
import dev.muon.internal.TorchNatives;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * Whether a state can be restored into an optimizer, as the list of every difference: the one fit check of
 * muon-core, used by every restore ({@code Muon.restore}, {@code MuonAdamW.restore}, and so every {@code load} and
 * {@code importTorchStateDict}).
 *
 * <p>A state fits an optimizer whose own state it could be: the same entries (name, optimizer, group, shape,
 * dtype, tie, row split, in order), the same number of Muon groups, an AdamW part on both sides or neither, the
 * same Muon build settings (every {@link dev.muon.MuonConfig} field except the hyperparameters a restore takes: {@code lr},
 * {@code weightDecay}, {@code momentum}, {@code nesterov}, {@code adjustLr}, {@code extraScale}), a schedule
 * record with one base lr per group, and tensors that belong where they are: a parameter's value and AdamW's
 * moments of its shape and dtype, each Muon state buffer one its update declares ({@link BufferSpec}: the momentum,
 * NorMuon's second moment) with the declared shape and dtype, every declared buffer or none, all finite (the
 * parameter values too: a NaN weight trains NaN from the first step), AdamW's {@code exp_avg_sq} and a buffer
 * declared non-negative {@code >= 0}, and AdamW's step count in {@code [0, step]}.
 *
 * <p>It compares documents ({@link CheckpointDocument}) and checks tensors through their module
 * ({@link TensorIo}), so that it loads no libtorch class: {@link StateFit} runs it on libtorch's states, muon-djl on
 * its own optimizers' documents and {@link RawTensor}s, with the same differences and messages.
 */
final class CheckpointFit {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private CheckpointFit() {
    }

    /**
     * Every difference of a read checkpoint from what an optimizer can restore.
     *
     * @param optimizer the optimizer's own document
     * @param candidate the document to restore
     * @param tensors   the candidate's tensors by {@code <kind>/<parameter>}
     * @return the differences, empty when the candidate fits
     */
    public static List<StateMismatchException.Difference> differences(CheckpointDocument optimizer,
                                                                      CheckpointDocument candidate,
                                                                      Map<String, RawTensor> tensors) {
        return differences(optimizer, candidate, tensors, RawTensor.IO);
    }

    /**
     * Throws unless a read checkpoint fits.
     *
     * @param optimizer the optimizer's own document
     * @param candidate the document to restore
     * @param tensors   the candidate's tensors
     * @param source    what to name in the message, e.g. {@code checkpoint /runs/a.ckpt}
     * @param hints     adds a hint to a difference where a builder setting explains it
     * @throws StateMismatchException listing every difference
     */
    public static void require(CheckpointDocument optimizer, CheckpointDocument candidate,
                               Map<String, RawTensor> tensors, String source,
                               UnaryOperator<StateMismatchException.Difference> hints) {
        List<StateMismatchException.Difference> found = differences(optimizer, candidate, tensors);
        if (!found.isEmpty()) {
            throw new StateMismatchException(source, found.stream().map(hints).toList());
        }
    }

    /** {@link #differences(CheckpointDocument, CheckpointDocument, Map)} for any module's tensors. */
    static <T> List<StateMismatchException.Difference> differences(CheckpointDocument optimizer,
                                                                   CheckpointDocument candidate,
                                                                   Map<String, T> tensors, TensorIo<T> io) {
        List<StateMismatchException.Difference> out = documentDifferences(optimizer, candidate);
        if (out.isEmpty()) {
            out.addAll(tensorDifferences(candidate, tensors, io));
        }
        return out;
    }

    /** The document's differences alone: groups, configs, parameters and the schedule's record. */
    static List<StateMismatchException.Difference> documentDifferences(CheckpointDocument optimizer,
                                                                       CheckpointDocument candidate) {
        List<StateMismatchException.Difference> out = new ArrayList<>();
        compareGroups(optimizer, candidate, out);
        compareEntries(optimizer.parameters(), candidate.parameters(), out);
        if (candidate.schedule() != null && candidate.schedule().initialLrs().length != candidate.groupCount()) {
            out.add(new StateMismatchException.Difference("schedule", StateMismatchException.Field.BASE_LRS, candidate.groupCount()
                    + " (one per group)", String.valueOf(candidate.schedule().initialLrs().length), null));
        }
        return out;
    }

    /** The tensors' differences from a document that fits: each tensor's shape, dtype and values. */
    static <T> List<StateMismatchException.Difference> tensorDifferences(CheckpointDocument candidate,
                                                                         Map<String, T> tensors, TensorIo<T> io) {
        List<StateMismatchException.Difference> out = new ArrayList<>();
        for (CheckpointDocument.Parameter p : candidate.parameters()) {
            checkTensors(p, candidate, tensors, io, out);
        }
        return out;
    }

    private static void compareGroups(CheckpointDocument optimizer, CheckpointDocument candidate,
                                      List<StateMismatchException.Difference> out) {
        if (optimizer.muonConfigs().size() != candidate.muonConfigs().size()) {
            out.add(new StateMismatchException.Difference("muon", StateMismatchException.Field.GROUPS,
                    String.valueOf(optimizer.muonConfigs().size()), String.valueOf(candidate.muonConfigs().size()),
                    null));
        } else {
            for (int g = 0; g < optimizer.muonConfigs().size(); g++) {
                for (String[] d : ConfigFields.differing(optimizer.muonConfigs().get(g),
                        candidate.muonConfigs().get(g), ConfigFields.MUON, false)) {
                    out.add(StateMismatchException.Difference.setting("muon group " + g, d[0], d[1], d[2],
                            "a build setting: build the optimizer with " + d[0] + " " + d[2]));
                }
            }
        }
        if ((optimizer.adamWConfig() == null) != (candidate.adamWConfig() == null)) {
            out.add(new StateMismatchException.Difference("adamw", StateMismatchException.Field.PART,
                    optimizer.adamWConfig() == null ? "none" : "present",
                    candidate.adamWConfig() == null ? "none" : "present", null));
        }
    }

    private static void compareEntries(List<CheckpointDocument.Parameter> mine,
                                       List<CheckpointDocument.Parameter> theirs,
                                       List<StateMismatchException.Difference> out) {
        if (mine.size() != theirs.size()) {
            Set<String> mineNames = new HashSet<>();
            mine.forEach(s -> mineNames.add(s.name()));
            Set<String> theirNames = new HashSet<>();
            theirs.forEach(s -> theirNames.add(s.name()));
            out.add(new StateMismatchException.Difference("parameters", StateMismatchException.Field.COUNT, String.valueOf(mine.size()),
                    String.valueOf(theirs.size()), null));
            for (CheckpointDocument.Parameter s : mine) {
                if (!theirNames.contains(s.name())) {
                    out.add(StateMismatchException.Difference.of(s.name(), null, StateMismatchException.Field.PRESENCE, "present", "absent",
                            null));
                }
            }
            for (CheckpointDocument.Parameter s : theirs) {
                if (!mineNames.contains(s.name())) {
                    out.add(StateMismatchException.Difference.of(s.name(), null, StateMismatchException.Field.PRESENCE, "absent", "present",
                            null));
                }
            }
            return;
        }
        for (int i = 0; i < mine.size(); i++) {
            CheckpointDocument.Parameter a = mine.get(i);
            CheckpointDocument.Parameter b = theirs.get(i);
            String name = a.name();
            field(out, name, StateMismatchException.Field.NAME, a.name(), b.name());
            field(out, name, StateMismatchException.Field.OPTIMIZER, a.optimizer(), b.optimizer());
            field(out, name, StateMismatchException.Field.GROUP, a.group(), b.group());
            field(out, name, StateMismatchException.Field.SHAPE, Arrays.toString(a.shape()), Arrays.toString(b.shape()));
            field(out, name, StateMismatchException.Field.DTYPE, a.dtype(), b.dtype());
            field(out, name, StateMismatchException.Field.TIED_TO, a.tiedTo(), b.tiedTo());
            field(out, name, StateMismatchException.Field.ROW_SPLIT, a.rowSplit(), b.rowSplit());
        }
    }

    private static void field(List<StateMismatchException.Difference> out, String parameter,
                              StateMismatchException.Field field,
                              Object mine, Object theirs) {
        String a = mine == null ? "none" : String.valueOf(mine);
        String b = theirs == null ? "none" : String.valueOf(theirs);
        if (!a.equals(b)) {
            out.add(StateMismatchException.Difference.of(parameter, null, field, a, b, null));
        }
    }

    private static <T> void checkTensors(CheckpointDocument.Parameter spec, CheckpointDocument state,
                                         Map<String, T> tensors, TensorIo<T> io,
                                         List<StateMismatchException.Difference> out) {
        String name = spec.name();
        T value = tensors.get(TensorNames.value(name));
        if (like(out, name, TensorNames.VALUE, value, spec.shape(), spec.dtype(), io)) {
            finite(out, name, TensorNames.VALUE, value, io);
        }
        List<BufferSpec> declared = state.declaredBuffers(spec);
        for (String tensor : tensors.keySet()) {
            int slash = tensor.indexOf('/');
            if (slash < 0 || !tensor.substring(slash + 1).equals(name)) {
                continue;
            }
            String key = tensor.substring(0, slash);
            if (!TensorNames.FIXED_KINDS.contains(key) && declared.stream().noneMatch(d -> d.key().equals(key))) {
                out.add(StateMismatchException.Difference.unknownBuffer(name, key,
                        "none (its update keeps " + keys(declared) + ")"));
            }
        }
        int held = 0;
        String dtypeName = spec.dtypeName();
        for (BufferSpec d : declared) {
            T t = tensors.get(TensorNames.buffer(d, name));
            if (t == null) {
                continue;
            }
            held++;
            long[] shape = d.shape().of(spec.shape());
            String heldName = TensorKind.dtypeNameOf(io.dtypeText(t));
            if (!Arrays.equals(io.shape(t), shape)) {
                out.add(StateMismatchException.Difference.of(name, d.label(), StateMismatchException.Field.SHAPE, Arrays.toString(shape),
                        Arrays.toString(io.shape(t)), null));
            } else if (!d.dtype().accepts(heldName, dtypeName)) {
                out.add(StateMismatchException.Difference.of(name, d.label(), StateMismatchException.Field.DTYPE,
                        TensorKind.documentNameOf(d.dtype().of(dtypeName)), io.dtypeText(t), null));
            } else {
                finite(out, name, d.label(), t, io);
                if (d.values() == BufferSpec.Values.FINITE_NON_NEGATIVE) {
                    nonNegative(out, name, d.label(), t, io);
                }
            }
        }
        // A parameter's update starts every buffer it declares at its first step: a state holds all or none.
        if (held != 0 && held != declared.size()) {
            out.add(StateMismatchException.Difference.of(name, null, StateMismatchException.Field.MUON_STATE, "every buffer its update keeps ("
                    + keys(declared) + ") or none", keys(declared.stream()
                    .filter(d -> tensors.get(TensorNames.buffer(d, name)) != null).toList()) + " only", null));
        }
        T expAvg = tensors.get(TensorNames.expAvg(name));
        T expAvgSq = tensors.get(TensorNames.expAvgSq(name));
        if (spec.adamWStep() != null && expAvg != null && expAvgSq != null) {
            if (like(out, name, TensorNames.EXP_AVG, expAvg, spec.shape(), spec.dtype(), io)) {
                finite(out, name, TensorNames.EXP_AVG, expAvg, io);
            }
            if (like(out, name, TensorNames.EXP_AVG_SQ, expAvgSq, spec.shape(), spec.dtype(), io)) {
                finite(out, name, TensorNames.EXP_AVG_SQ, expAvgSq, io);
                nonNegative(out, name, TensorNames.EXP_AVG_SQ, expAvgSq, io);
            }
            if (spec.adamWStep() > state.step()) {
                out.add(StateMismatchException.Difference.of(name, null, StateMismatchException.Field.ADAMW_STEP, "in [0, " + state.step()
                        + "] (the state's step)", String.valueOf(spec.adamWStep()), null));
            }
        }
    }

    private static String keys(List<BufferSpec> declared) {
        return declared.isEmpty() ? "none" : String.join(", ", declared.stream().map(BufferSpec::label).toList());
    }

    /** Whether a tensor, if present, has the shape and dtype; records a difference if not. */
    private static <T> boolean like(List<StateMismatchException.Difference> out, String parameter, String what,
                                    T t, long[] shape, String dtype, TensorIo<T> io) {
        if (t == null) {
            return false;
        }
        if (!Arrays.equals(io.shape(t), shape)) {
            out.add(StateMismatchException.Difference.of(parameter, what, StateMismatchException.Field.SHAPE, Arrays.toString(shape),
                    Arrays.toString(io.shape(t)), null));
            return false;
        }
        if (!io.dtypeText(t).equals(dtype)) {
            out.add(StateMismatchException.Difference.of(parameter, what, StateMismatchException.Field.DTYPE, dtype, io.dtypeText(t), null));
            return false;
        }
        return true;
    }

    private static <T> void finite(List<StateMismatchException.Difference> out, String parameter, String what, T t,
                                   TensorIo<T> io) {
        if (!io.allFinite(t)) {
            out.add(StateMismatchException.Difference.of(parameter, what, StateMismatchException.Field.VALUES, "finite", "NaN or Inf", null));
        }
    }

    private static <T> void nonNegative(List<StateMismatchException.Difference> out, String parameter, String what,
                                        T t, TensorIo<T> io) {
        if (io.anyNegative(t)) {
            out.add(StateMismatchException.Difference.of(parameter, what, StateMismatchException.Field.VALUES, ">= 0", "a negative value",
                    null));
        }
    }
}
