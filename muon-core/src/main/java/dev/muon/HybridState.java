package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.schedule.ScheduleRecord;
import dev.muon.state.AdamWMoments;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;
import dev.muon.state.ParameterSpec;
import dev.muon.state.StateMismatchException;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A {@link MuonAdamW}'s state as one {@link OptimizerState}: its Muon's entries and AdamW's, one per named
 * parameter in the assignment's order (tied names included), and the way back: the Muon part of a state, and the
 * builder settings that explain why a state does not fit.
 */
final class HybridState {
    private HybridState() {
    }

    /**
     * The state of the parameters of {@code assignment}.
     *
     * @param muon    the state of the optimizer's Muon ({@link Muon#captureState}), or null for an empty Muon group
     * @param moments AdamW's moments by tensor identity ({@link AdamWGroup#moments()}); unused without tensors
     */
    static OptimizerState capture(Assignment assignment, OptimizerState muon, Map<Long, AdamWMoments> moments,
                                  StateCapture capture, long step, MuonConfig muonConfig, AdamWConfig adamWConfig,
                                  ScheduleRecord schedule) {
        Map<String, ParameterEntry> muonEntries = new LinkedHashMap<>();
        if (muon != null) {
            for (ParameterEntry e : muon.entries()) {
                muonEntries.put(e.name(), e);
            }
        }
        Set<String> undecayed = Set.copyOf(assignment.adamWNames(false));
        List<ParameterEntry> entries = new ArrayList<>();
        for (Assignment.Decision d : assignment.decisions()) {
            Tensor t = d.tensor();
            if (d.isAlias()) {
                entries.add(ParameterEntry.of(ParameterSpec.tied(d.name(), d.aliasOf(), t.shape(),
                        t.scalar_type())));
            } else if (d.kind() == OptimizerKind.MUON) {
                entries.add(muonEntries.get(d.name()));
            } else {
                ParameterEntry e = ParameterEntry.of(ParameterSpec.adamW(d.name(), undecayed.contains(d.name()),
                        t.shape(), t.scalar_type()));
                if (capture != StateCapture.NONE) {
                    AdamWMoments m = moments.get(ParameterState.identityOf(t));
                    boolean copy = capture == StateCapture.COPIES;
                    e = e.withValue(copy ? NativeLifetime.outliveScope(t.detach().clone()) : t)
                            .withAdamW(m == null || !copy ? m : new AdamWMoments(
                                    NativeLifetime.outliveScope(m.expAvg().clone()),
                                    NativeLifetime.outliveScope(m.expAvgSq().clone()), m.step()));
                }
                entries.add(e);
            }
        }
        return new OptimizerState(step, List.of(muonConfig), adamWConfig, entries, schedule);
    }

    /** The Muon entries of a checked state, as the state of the optimizer's Muon. */
    static OptimizerState muonPart(OptimizerState checked) {
        List<ParameterEntry> entries = checked.entries().stream()
                .filter(e -> e.spec().optimizer() == OptimizerKind.MUON).toList();
        return new OptimizerState(checked.step(), checked.muonConfigs(), null, entries, null);
    }

    /**
     * The builder settings that explain a difference: a parameter {@code assignment} puts on AdamW by the
     * output-layer rule, or the AdamW group a parameter is in ({@code noWeightDecayBelow2D}).
     */
    static StateMismatchException.Difference withHint(Assignment assignment, StateMismatchException.Difference d) {
        for (Assignment.Decision decision : assignment.decisions()) {
            if (!decision.name().equals(d.parameter())) {
                continue;
            }
            if (d.field() == StateMismatchException.Field.OPTIMIZER && decision.verdict().reason() == AssignmentRule.Reason.OUTPUT_LAYER) {
                return hinted(d, "'" + decision.name() + "' is on AdamW by the output-layer rule: build with "
                        + "outputLayerOnAdamW(false) to load a state saved with it on Muon");
            }
            if (d.field() == StateMismatchException.Field.GROUP && decision.kind() == OptimizerKind.ADAMW) {
                boolean on = assignment.noDecayBelow2D();
                return hinted(d, "this optimizer keeps " + (on ? 2 : 1) + " AdamW parameter group"
                        + (on ? "s" : "") + " (noWeightDecayBelow2D(" + on + ")): a state saved with "
                        + "noWeightDecayBelow2D(" + !on + ") loads only into an optimizer built the same way");
            }
        }
        return d;
    }

    private static StateMismatchException.Difference hinted(StateMismatchException.Difference d, String hint) {
        return d.withHint(hint);
    }
}
