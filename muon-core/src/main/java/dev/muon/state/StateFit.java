package dev.muon.state;

import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * Whether a state can be restored into an optimizer, as the list of every difference: the one fit check of
 * muon-core, used by every restore ({@code Muon.restore}, {@code MuonAdamW.restore}, and so every {@code load} and
 * {@code importTorchStateDict}).
 *
 * <p>A state fits an optimizer whose own state it could be: the same entries (name, optimizer, group, shape,
 * dtype, tie, row split, in order), the same number of Muon groups, an AdamW part on both sides or neither, the
 * same Muon build settings (every {@link MuonConfig} field except the hyperparameters a restore takes: {@code lr},
 * {@code weightDecay}, {@code momentum}, {@code nesterov}, {@code adjustLr}, {@code extraScale}), a schedule
 * record with one base lr per group, and tensors that belong where they are: a parameter's value and AdamW's
 * moments of its shape and dtype, each Muon state buffer one its update declares ({@link BufferSpec}: the momentum,
 * NorMuon's second moment) with the declared shape and dtype, every declared buffer or none, all finite (the
 * parameter values too: a NaN weight trains NaN from the first step), AdamW's {@code exp_avg_sq} and a buffer
 * declared non-negative {@code >= 0}, and AdamW's step count in {@code [0, step]}.
 */
public final class StateFit {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private StateFit() {
    }

    /**
     * Every difference of {@code candidate} from what {@code optimizer} can restore.
     *
     * @param optimizer the optimizer's own state (its values are not used)
     * @param candidate the state to restore
     * @return the differences, empty when the candidate fits
     */
    public static List<StateMismatchException.Difference> differences(OptimizerState optimizer,
                                                                      OptimizerState candidate) {
        List<StateMismatchException.Difference> out = new ArrayList<>();
        compareGroups(optimizer, candidate, out);
        compareEntries(optimizer.specs(), candidate.specs(), out);
        if (candidate.schedule() != null && candidate.schedule().initialLrs().length != candidate.groupCount()) {
            out.add(new StateMismatchException.Difference("schedule", "base lrs", candidate.groupCount()
                    + " (one per group)", String.valueOf(candidate.schedule().initialLrs().length), null));
        }
        if (out.isEmpty()) {
            for (ParameterEntry e : candidate.entries()) {
                checkTensors(e, candidate, out);
            }
        }
        return out;
    }

    /**
     * Throws if {@code candidate} does not fit.
     *
     * @param optimizer the optimizer's own state
     * @param candidate the state to restore
     * @param source    what the state came from, for the message ("checkpoint /x/run.ckpt")
     * @param hints     adds the optimizer's advice to a difference (identity for none)
     * @throws StateMismatchException listing every difference
     */
    public static void require(OptimizerState optimizer, OptimizerState candidate, String source,
                               UnaryOperator<StateMismatchException.Difference> hints) {
        List<StateMismatchException.Difference> found = differences(optimizer, candidate);
        if (!found.isEmpty()) {
            throw new StateMismatchException(source, found.stream().map(hints).toList());
        }
    }

    private static void compareGroups(OptimizerState optimizer, OptimizerState candidate,
                                      List<StateMismatchException.Difference> out) {
        if (optimizer.muonConfigs().size() != candidate.muonConfigs().size()) {
            out.add(new StateMismatchException.Difference("muon", "groups",
                    String.valueOf(optimizer.muonConfigs().size()), String.valueOf(candidate.muonConfigs().size()),
                    null));
        } else {
            for (int g = 0; g < optimizer.muonConfigs().size(); g++) {
                for (String[] d : ConfigFields.differing(optimizer.muonConfigs().get(g),
                        candidate.muonConfigs().get(g), ConfigFields.MUON, false)) {
                    out.add(new StateMismatchException.Difference("muon group " + g, d[0], d[1], d[2],
                            "a build setting: build the optimizer with " + d[0] + " " + d[2]));
                }
            }
        }
        if ((optimizer.adamWConfig() == null) != (candidate.adamWConfig() == null)) {
            out.add(new StateMismatchException.Difference("adamw", "part",
                    optimizer.adamWConfig() == null ? "none" : "present",
                    candidate.adamWConfig() == null ? "none" : "present", null));
        }
    }

    private static void compareEntries(List<ParameterSpec> mine, List<ParameterSpec> theirs,
                                       List<StateMismatchException.Difference> out) {
        if (mine.size() != theirs.size()) {
            Set<String> mineNames = new HashSet<>();
            mine.forEach(s -> mineNames.add(s.name()));
            Set<String> theirNames = new HashSet<>();
            theirs.forEach(s -> theirNames.add(s.name()));
            out.add(new StateMismatchException.Difference("parameters", "count", String.valueOf(mine.size()),
                    String.valueOf(theirs.size()), null));
            for (ParameterSpec s : mine) {
                if (!theirNames.contains(s.name())) {
                    out.add(StateMismatchException.Difference.of(s.name(), null, "presence", "present", "absent",
                            null));
                }
            }
            for (ParameterSpec s : theirs) {
                if (!mineNames.contains(s.name())) {
                    out.add(StateMismatchException.Difference.of(s.name(), null, "presence", "absent", "present",
                            null));
                }
            }
            return;
        }
        for (int i = 0; i < mine.size(); i++) {
            ParameterSpec a = mine.get(i);
            ParameterSpec b = theirs.get(i);
            String name = a.name();
            field(out, name, "name", a.name(), b.name());
            field(out, name, "optimizer", a.optimizer(), b.optimizer());
            field(out, name, "group", a.group(), b.group());
            field(out, name, "shape", Arrays.toString(a.shape()), Arrays.toString(b.shape()));
            field(out, name, "dtype", a.dtype(), b.dtype());
            field(out, name, "tied to", a.tiedTo(), b.tiedTo());
            field(out, name, "row split", a.rowSplit(), b.rowSplit());
        }
    }

    private static void field(List<StateMismatchException.Difference> out, String parameter, String field,
                              Object mine, Object theirs) {
        String a = mine == null ? "none" : String.valueOf(mine);
        String b = theirs == null ? "none" : String.valueOf(theirs);
        if (!a.equals(b)) {
            out.add(StateMismatchException.Difference.of(parameter, null, field, a, b, null));
        }
    }

    private static void checkTensors(ParameterEntry e, OptimizerState state,
                                     List<StateMismatchException.Difference> out) {
        ParameterSpec spec = e.spec();
        String name = spec.name();
        if (like(out, name, "value", e.value(), spec.shape(), spec.dtype())) {
            finite(out, name, "value", e.value());
        }
        List<BufferSpec> declared = state.declaredBuffers(spec);
        for (String key : e.buffers().keySet()) {
            if (declared.stream().noneMatch(d -> d.key().equals(key))) {
                out.add(StateMismatchException.Difference.of(name, null, "buffer '" + key + "'",
                        "none (its update keeps " + keys(declared) + ")", "present", null));
            }
        }
        int held = 0;
        for (BufferSpec d : declared) {
            Tensor t = e.buffer(d.key());
            if (t == null) {
                continue;
            }
            held++;
            if (!Arrays.equals(t.shape(), spec.shapeOf(d))) {
                out.add(StateMismatchException.Difference.of(name, d.label(), "shape",
                        Arrays.toString(spec.shapeOf(d)), Arrays.toString(t.shape()), null));
            } else if (!spec.accepts(d, t.scalar_type())) {
                out.add(StateMismatchException.Difference.of(name, d.label(), "dtype", spec.dtypeOf(d).toString(),
                        t.scalar_type().toString(), null));
            } else {
                finite(out, name, d.label(), t);
                if (d.values() == BufferSpec.Values.FINITE_NON_NEGATIVE) {
                    nonNegative(out, name, d.label(), t);
                }
            }
        }
        // A parameter's update starts every buffer it declares at its first step: a state holds all or none.
        if (held != 0 && held != declared.size()) {
            out.add(StateMismatchException.Difference.of(name, null, "Muon state", "every buffer its update keeps ("
                    + keys(declared) + ") or none", keys(declared.stream().filter(d -> e.buffer(d.key()) != null)
                    .toList()) + " only", null));
        }
        AdamWMoments m = e.adamW();
        if (m != null) {
            if (like(out, name, "exp_avg", m.expAvg(), spec.shape(), spec.dtype())) {
                finite(out, name, "exp_avg", m.expAvg());
            }
            if (like(out, name, "exp_avg_sq", m.expAvgSq(), spec.shape(), spec.dtype())) {
                finite(out, name, "exp_avg_sq", m.expAvgSq());
                nonNegative(out, name, "exp_avg_sq", m.expAvgSq());
            }
            if (m.step() > state.step()) {
                out.add(StateMismatchException.Difference.of(name, null, "AdamW step", "in [0, " + state.step()
                        + "] (the state's step)", String.valueOf(m.step()), null));
            }
        }
    }

    /** The keys of declarations, as a message lists them. */
    private static String keys(List<BufferSpec> declared) {
        return declared.isEmpty() ? "none" : String.join(", ", declared.stream().map(BufferSpec::label).toList());
    }

    /** Whether a tensor, if present, has the shape and dtype; records a difference if not. */
    private static boolean like(List<StateMismatchException.Difference> out, String parameter, String what,
                                Tensor t, long[] shape, ScalarType dtype) {
        if (t == null) {
            return false;
        }
        if (!Arrays.equals(t.shape(), shape)) {
            out.add(StateMismatchException.Difference.of(parameter, what, "shape", Arrays.toString(shape),
                    Arrays.toString(t.shape()), null));
            return false;
        }
        if (t.scalar_type().value != dtype.value) {
            out.add(StateMismatchException.Difference.of(parameter, what, "dtype", dtype.toString(),
                    t.scalar_type().toString(), null));
            return false;
        }
        return true;
    }

    private static void finite(List<StateMismatchException.Difference> out, String parameter, String what,
                               Tensor t) {
        if (t.numel() > 0 && !t.isfinite().all().item_bool()) {
            out.add(StateMismatchException.Difference.of(parameter, what, "values", "finite", "NaN or Inf", null));
        }
    }

    private static void nonNegative(List<StateMismatchException.Difference> out, String parameter, String what,
                                    Tensor t) {
        if (t.numel() > 0 && t.lt(new org.bytedeco.pytorch.Scalar(0.0)).any().item_bool()) {
            out.add(StateMismatchException.Difference.of(parameter, what, "values", ">= 0", "a negative value",
                    null));
        }
    }
}
