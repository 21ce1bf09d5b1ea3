package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.ShardPlan;
import dev.muon.distributed.ShardingConfig;
import dev.muon.distributed.SyncPrecision;
import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * The distributed side of one {@link Muon}: which parameters this rank owns, and the broadcast that brings every
 * rank the owners' updated values after each step.
 *
 * <p>Parameters travel one broadcast each, straight from and into the parameter's own memory, so syncing needs no
 * buffer of the model's size. Under {@link SyncPrecision#BFLOAT16} the owner keeps a float copy of what it owns
 * from before the update, sends {@code bf16(new − old)}, and every rank adds that to the old value, so that ranks
 * stay bit-identical; one bfloat16 workspace of the largest parameter's size carries it.
 */
final class Sharding {
    private final DistributedGroup group;
    private final ShardingConfig config;
    private final ShardPlan plan;
    private final Map<Integer, Tensor> before = new HashMap<>();
    private Tensor bf16Workspace;

    Sharding(DistributedGroup group, ShardingConfig config, ShardPlan plan) {
        this.group = group;
        this.config = config;
        this.plan = plan;
    }

    DistributedGroup group() {
        return group;
    }

    ShardingConfig config() {
        return config;
    }

    ShardPlan plan() {
        return plan;
    }

    boolean owns(int index) {
        return plan.owner(index) == group.rank();
    }

    /**
     * Plans the given states' matrices over the group, keeping each same-shape batch of {@code together} on one
     * rank: a batch then runs whole on its owner, as it would in one process, so that the number of ranks changes
     * no bit of the update.
     */
    static ShardPlan planFor(List<ParameterState> states, List<List<Integer>> together, int worldSize) {
        List<long[]> shapes = new ArrayList<>();
        for (ParameterState state : states) {
            shapes.add(new long[]{state.layout.rows(), state.layout.cols()});
        }
        return ShardPlan.longestProcessingTimeFirst(shapes, together, worldSize);
    }

    /** Before the owned updates: remembers the owned values that a bfloat16 sync needs as its base. */
    void beforeUpdate(List<ParameterState> states) {
        if (config.syncPrecision() != SyncPrecision.BFLOAT16) {
            return;
        }
        for (int i = 0; i < states.size(); i++) {
            Tensor p = states.get(i).param;
            if (owns(i) && !isBf16(p)) {
                before.computeIfAbsent(i, k -> NativeLifetime.outliveScope(torch.empty_like(p))).copy_(p);
            }
        }
    }

    /** After the owned updates: every parameter goes from its owner to every other rank, in parameter order. */
    void broadcastUpdated(List<ParameterState> states) {
        for (int i = 0; i < states.size(); i++) {
            ParameterState state = states.get(i);
            int owner = plan.owner(i);
            String what = "Muon parameter " + i + " (" + state.label + ")";
            if (config.syncPrecision() == SyncPrecision.BFLOAT16 && !isBf16(state.param)) {
                broadcastBf16Update(i, state.param, owner, what);
            } else {
                group.broadcast(state.param, owner, what);
            }
        }
    }

    /**
     * Gathers one per-parameter buffer of every parameter on rank 0 for a checkpoint (the momentum, or NorMuon's
     * second moment): each owner sends its buffer, and a mask summed over the group first tells every rank which
     * buffers exist. A collective: every rank calls it.
     *
     * @param states   the parameters, in order
     * @param buffer   the buffer of the parameter at a position on its owner, null where it has none yet (asked
     *                 once per owned parameter: it may read the buffer from where it lives)
     * @param allocate a new tensor of the buffer's shape and dtype, for rank 0 to receive into
     * @param what     the buffer's name, for messages
     * @return per parameter in order: on rank 0 every buffer (null where none exists yet); on the others their
     *         own buffers and nulls
     */
    List<Tensor> gather(List<ParameterState> states, IntFunction<Tensor> buffer,
                        Function<ParameterState, Tensor> allocate, String what) {
        int n = states.size();
        long[] mine = new long[n];
        Tensor[] own = new Tensor[n];
        for (int i = 0; i < n; i++) {
            if (owns(i)) {
                own[i] = buffer.apply(i);
                mine[i] = own[i] != null ? 1 : 0;
            }
        }
        long[] has = group.allReduceSum(mine, "the " + what + "-presence mask for a checkpoint");
        List<Tensor> gathered = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Tensor t = null;
            if (has[i] != 0) {
                int owner = plan.owner(i);
                String label = "the " + what + " of Muon parameter " + i + " (" + states.get(i).label
                        + ") for a checkpoint";
                if (owner == group.rank()) {
                    t = own[i];
                    if (group.rank() != 0) {
                        group.send(t, 0, i, label);
                    }
                } else if (group.rank() == 0) {
                    t = allocate.apply(states.get(i));
                    group.receive(t, owner, i, label);
                }
            }
            gathered.add(t);
        }
        return gathered;
    }

    private void broadcastBf16Update(int index, Tensor p, int owner, String what) {
        Tensor delta = bf16Slice(p);
        if (owner == group.rank()) {
            Tensor old = before.get(index);
            // p − old in place, rounded into the workspace, then p back to old: no temporary of p's size.
            p.sub_(old);
            delta.copy_(p);
            p.copy_(old);
        }
        group.broadcast(delta, owner, what + " update in bfloat16");
        p.add_(delta);
    }

    /** A view of the bfloat16 workspace in {@code p}'s shape, growing the workspace if {@code p} is larger. */
    private Tensor bf16Slice(Tensor p) {
        long numel = p.numel();
        if (bf16Workspace == null || bf16Workspace.numel() < numel) {
            bf16Workspace = NativeLifetime.outliveScope(torch.zeros(new long[]{numel},
                    new TensorOptions(torch.ScalarType.BFloat16).device(
                            new org.bytedeco.pytorch.DeviceOptional(p.device()))));
        }
        return bf16Workspace.narrow(0, 0, numel).view(p.shape());
    }

    private static boolean isBf16(Tensor t) {
        return t.scalar_type().value == torch.ScalarType.BFloat16.value;
    }
}
