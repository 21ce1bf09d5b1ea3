package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.schedule.ScheduleRecord;
import dev.muon.state.BufferSpec;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;
import dev.muon.state.ParameterSpec;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Moves a Muon's parameter state into an {@link OptimizerState} and back: each parameter's value and the state
 * buffers its update declares, under its name and group, with the groups' configs. Distributed, the owners' buffers
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
     * The state. With tensors, distributed, a collective: the owners send their buffers to rank 0
     * ({@link #buffersForCheckpoint}).
     */
    OptimizerState capture(StateCapture capture, long step, ScheduleRecord schedule) {
        List<Map<String, Tensor>> buffers = capture == StateCapture.NONE ? null : buffersForCheckpoint();
        List<ParameterEntry> entries = new ArrayList<>();
        List<MuonConfig> configs = new ArrayList<>();
        int i = 0;
        for (int g = 0; g < groups.size(); g++) {
            configs.add(groups.get(g).config());
            for (ParameterState state : groups.get(g).params) {
                ParameterEntry entry = ParameterEntry.of(ParameterSpec.muon(state.name, g, state.param.shape(),
                        state.param.scalar_type(), state.rowBlocks == null ? null : state.rowBlocks.rule));
                if (capture != StateCapture.NONE) {
                    entry = entry.withValue(captured(state.param, capture));
                    for (Map.Entry<String, Tensor> b : buffers.get(i).entrySet()) {
                        entry = entry.withBuffer(b.getKey(), captured(b.getValue(), capture));
                    }
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
     * Restores the parameter values, buffers and groups' hyperparameters of a state that
     * {@link dev.muon.state.StateFit} has accepted: cannot fail (copies into tensors of checked shapes; a buffer
     * held in the parameter's dtype is rounded to its declared one). Distributed, each rank keeps the buffers of the
     * parameters it owns.
     */
    void apply(OptimizerState checked) {
        for (int i = 0; i < states.size(); i++) {
            ParameterState state = states.get(i);
            ParameterEntry entry = checked.entries().get(i);
            if (entry.value() != null) {
                state.param.copy_(entry.value());
            }
            boolean owned = sharding == null || sharding.owns(i);
            for (BufferSpec spec : state.declared) {
                Tensor held = entry.buffer(spec.key());
                if (held != null && (owned || !spec.owned())) {
                    state.bufferForUpdate(spec).copy_(held);
                } else {
                    state.drop(spec);
                }
            }
        }
        for (int g = 0; g < groups.size(); g++) {
            groups.get(g).hyperparameters(checked.muonConfigs().get(g).hyperparameters());
        }
    }

    /**
     * Every parameter's buffers by key, in group order, for a checkpoint (none where a parameter has none yet).
     * Distributed, a collective: every rank must call it, the owners send the buffers declared
     * {@link BufferSpec#owned()} to rank 0, and only rank 0's lists are complete (the others hold their own
     * buffers).
     */
    List<Map<String, Tensor>> buffersForCheckpoint() {
        List<Map<String, Tensor>> out = new ArrayList<>();
        states.forEach(state -> out.add(new LinkedHashMap<>()));
        // Every parameter of one optimizer declares its buffers in one order per group; gather key by key.
        Set<BufferSpec> specs = new LinkedHashSet<>();
        states.forEach(state -> specs.addAll(state.declared));
        for (BufferSpec spec : specs) {
            List<Tensor> held;
            if (sharding == null || !spec.owned()) {
                held = new ArrayList<>();
                states.forEach(state -> held.add(state.declared.contains(spec) ? state.buffer(spec.key()) : null));
            } else {
                held = sharding.gather(states,
                        state -> state.declared.contains(spec) ? state.buffer(spec.key()) : null,
                        state -> state.newBuffer(spec), spec.label());
            }
            for (int i = 0; i < states.size(); i++) {
                if (held.get(i) != null) {
                    out.get(i).put(spec.key(), held.get(i));
                }
            }
        }
        return out;
    }

    /** The bytes of the state buffers this process holds. */
    long bytes() {
        long bytes = 0;
        for (ParameterState state : states) {
            bytes += state.bytes();
        }
        return bytes;
    }
}
