package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.schedule.ScheduleRecord;
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
    /** Where each parameter keeps its buffers between updates. */
    private final StateHomes homes;
    /** The state {@link #stage} stored in the homes and {@link #apply} has yet to commit, or null. */
    private OptimizerState staged;

    MuonStateTransfer(List<MuonGroup> groups, List<ParameterState> states, Sharding sharding, StateHomes homes) {
        this.groups = groups;
        this.states = states;
        this.sharding = sharding;
        this.homes = homes;
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
     * Stores the buffers of a state that {@link dev.muon.state.StateFit} has accepted in the homes of the parameters
     * that keep theirs away from them ({@link StateStorage}), staged: what the homes held stays in force until
     * {@link #apply} commits. The one part of a restore that can fail (a file write): it runs before anything
     * changes, and a failure leaves every home as it was.
     *
     * @throws java.io.UncheckedIOException if a home cannot store a buffer; nothing changed then
     */
    void stage(OptimizerState checked) {
        if (homes.all().isEmpty()) {
            return;
        }
        discardStaged();
        try {
            for (int i = 0; i < states.size(); i++) {
                ParameterState state = states.get(i);
                StateHome home = homes.of(i);
                if (home == null) {
                    continue;
                }
                ParameterEntry entry = checked.entries().get(i);
                for (BufferSpec spec : state.declared) {
                    Tensor held = entry.buffer(spec.key());
                    if (held != null && keeps(i, spec)) {
                        home.write(state, spec, held);
                    } else {
                        home.drop(state, spec);
                    }
                }
            }
        } catch (RuntimeException | Error e) {
            discardStaged();
            throw e;
        }
        staged = checked;
    }

    /** Lets go of what {@link #stage} stored: the homes keep what they held. */
    void discardStaged() {
        staged = null;
        homes.all().forEach(StateHome::discardWrites);
    }

    /**
     * Restores the parameter values, buffers and groups' hyperparameters of a state that
     * {@link dev.muon.state.StateFit} has accepted (a buffer held in the parameter's dtype is rounded to its declared
     * one). Distributed, each rank keeps the buffers of the parameters it owns. Stages the homes' part first unless
     * {@link #stage} did it for this state; past that, cannot fail (copies into tensors of checked shapes).
     *
     * @throws java.io.UncheckedIOException if a home cannot store a buffer; nothing changed then
     */
    void apply(OptimizerState checked) {
        if (staged != checked) {
            stage(checked);
        }
        staged = null;
        homes.all().forEach(StateHome::commitWrites);
        for (int i = 0; i < states.size(); i++) {
            ParameterState state = states.get(i);
            ParameterEntry entry = checked.entries().get(i);
            if (entry.value() != null) {
                state.param.copy_(entry.value());
            }
            if (homes.of(i) != null) {
                continue;
            }
            for (BufferSpec spec : state.declared) {
                Tensor held = entry.buffer(spec.key());
                if (held != null && keeps(i, spec)) {
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

    /** Whether this process keeps a buffer of the parameter at a position: every one, or distributed, its owner's. */
    private boolean keeps(int index, BufferSpec spec) {
        return sharding == null || sharding.owns(index) || !spec.owned();
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
                for (int i = 0; i < states.size(); i++) {
                    held.add(bufferOf(i, spec));
                }
            } else {
                held = sharding.gather(states, i -> bufferOf(i, spec), state -> state.newBuffer(spec),
                        spec.label());
            }
            for (int i = 0; i < states.size(); i++) {
                if (held.get(i) != null) {
                    out.get(i).put(spec.key(), held.get(i));
                }
            }
        }
        return out;
    }

    /** A declared buffer of the parameter at a position, wherever it lives, or null. */
    private Tensor bufferOf(int index, BufferSpec spec) {
        ParameterState state = states.get(index);
        return state.declared.contains(spec) ? homes.buffer(index, state, spec.key()) : null;
    }

    /** The bytes of the state buffers this process keeps, wherever they live. */
    long bytes() {
        long bytes = 0;
        for (int i = 0; i < states.size(); i++) {
            bytes += homes.bytes(i, states.get(i));
        }
        return bytes;
    }
}
