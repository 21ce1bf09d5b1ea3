package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.schedule.ScheduleRecord;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;
import dev.muon.state.ParameterSpec;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Moves a Muon's parameter state into an {@link OptimizerState} and back: each parameter's value, momentum buffer
 * and NorMuon second moment under its name and group, with the groups' configs. Distributed, the owners' buffers
 * are gathered to rank 0 for a state and kept by their owners on a restore. The step count and the schedule record
 * are the optimizer's, passed in.
 */
final class MuonStateTransfer {
    private final List<MuonGroup> groups;
    /** Every parameter in group order. */
    private final List<ParameterState> states;
    /** The sharding of a distributed optimizer, null in a single process. */
    private final Sharding sharding;

    MuonStateTransfer(List<MuonGroup> groups, List<ParameterState> states, Sharding sharding) {
        this.groups = groups;
        this.states = states;
        this.sharding = sharding;
    }

    /**
     * The state. With tensors, distributed, a collective: the owners send their momentum to rank 0
     * ({@link #momentumForCheckpoint}).
     */
    OptimizerState capture(StateCapture capture, long step, ScheduleRecord schedule) {
        List<Tensor> momentum = capture == StateCapture.NONE ? Collections.nCopies(states.size(), null)
                : momentumForCheckpoint();
        List<Tensor> secondMoments = capture == StateCapture.NONE ? Collections.nCopies(states.size(), null)
                : secondMomentsForCheckpoint();
        List<ParameterEntry> entries = new ArrayList<>();
        List<MuonConfig> configs = new ArrayList<>();
        int i = 0;
        for (int g = 0; g < groups.size(); g++) {
            configs.add(groups.get(g).config());
            for (ParameterState state : groups.get(g).params) {
                ParameterEntry entry = ParameterEntry.of(ParameterSpec.muon(state.name, g, state.param.shape(),
                        state.param.scalar_type(), state.rowBlocks == null ? null : state.rowBlocks.rule));
                if (capture != StateCapture.NONE) {
                    entry = entry.withValue(captured(state.param, capture)).withMomentum(
                            captured(momentum.get(i), capture)).withSecondMoment(
                            captured(secondMoments.get(i), capture));
                }
                entries.add(entry);
                i++;
            }
        }
        return new OptimizerState(step, configs, null, entries, schedule);
    }

    private static Tensor captured(Tensor t, StateCapture capture) {
        if (t == null) {
            return null;
        }
        return capture == StateCapture.COPIES ? NativeLifetime.outliveScope(t.detach().clone()) : t;
    }

    /**
     * Restores the parameter values, buffers and group configs of a state that {@link dev.muon.state.StateFit}
     * has accepted: cannot fail (copies into tensors of checked shapes). Distributed, each rank keeps the buffers
     * of the parameters it owns.
     */
    void apply(OptimizerState checked) {
        for (int i = 0; i < states.size(); i++) {
            ParameterState state = states.get(i);
            ParameterEntry entry = checked.entries().get(i);
            if (entry.value() != null) {
                state.param.copy_(entry.value());
            }
            boolean owned = sharding == null || sharding.owns(i);
            if (entry.momentum() != null && owned) {
                state.momentumMatrix();
                state.momentumBuffer().copy_(entry.momentum());
            } else {
                state.dropMomentum();
            }
            if (entry.secondMoment() != null && owned) {
                state.secondMomentForUpdate().copy_(entry.secondMoment());
            } else {
                state.dropSecondMoment();
            }
        }
        for (int g = 0; g < groups.size(); g++) {
            groups.get(g).hyperparameters(checked.muonConfigs().get(g).hyperparameters());
        }
    }

    /**
     * The momentum of every parameter in group order, for a checkpoint (null where a parameter has none yet).
     * Distributed, this is a collective: every rank must call it, the owners send their buffers to rank 0, and only
     * rank 0's list is complete (the others hold their own buffers and nulls).
     */
    List<Tensor> momentumForCheckpoint() {
        if (sharding == null) {
            List<Tensor> momentum = new ArrayList<>();
            states.forEach(state -> momentum.add(state.momentumBuffer()));
            return momentum;
        }
        return sharding.gather(states, ParameterState::momentumBuffer, ParameterState::newMomentum, "momentum");
    }

    /** NorMuon's second moments in group order, for a checkpoint: {@link #momentumForCheckpoint}'s rules. */
    List<Tensor> secondMomentsForCheckpoint() {
        if (sharding == null) {
            List<Tensor> moments = new ArrayList<>();
            states.forEach(state -> moments.add(state.secondMoment()));
            return moments;
        }
        return sharding.gather(states, ParameterState::secondMoment, ParameterState::newSecondMoment,
                "NorMuon second moment");
    }

    /** The bytes of momentum and NorMuon second moments this process holds. */
    long bytes() {
        long bytes = 0;
        for (ParameterState state : states) {
            Tensor buffer = state.momentumBuffer();
            if (buffer != null) {
                bytes += buffer.numel() * buffer.element_size();
            }
            Tensor secondMoment = state.secondMoment();
            if (secondMoment != null) {
                bytes += secondMoment.numel() * secondMoment.element_size();
            }
        }
        return bytes;
    }
}
