package dev.muon;

import dev.muon.internal.FusedUpdateKernels;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Muon's build: checks every group's parameters (defined, each given once, leaf tensors, of a shape and dtype Muon
 * accepts, contiguous where distributed, row splits that name parameters and fit their rows, no two sharing memory)
 * and makes each one's state, stages and update in progress, in the optimizer's order.
 */
final class MuonAssembly {
    final List<MuonGroup> groups;
    /** Every parameter in group order: the order of the shard plan and of the broadcasts. */
    final List<ParameterState> states;
    final PlannedUpdates updates;

    private MuonAssembly(List<MuonGroup> groups, List<ParameterState> states, PlannedUpdates updates) {
        this.groups = groups;
        this.states = states;
        this.updates = updates;
    }

    /**
     * Checks and assembles the groups a builder collected.
     *
     * @param names         one name per parameter of all groups in order, or null for "parameter i of group g"
     * @param rowSplits     the row splits given by tensor, in order
     * @param rowSplitRules the row splits given by predicate, in order
     * @param distributed   whether the optimizer is sharded (its parameters are broadcast in place)
     * @throws IllegalArgumentException as {@link Muon.Builder#build()} documents
     */
    static MuonAssembly of(List<List<Tensor>> paramLists, List<MuonConfig> configs, List<String> names,
                           List<Map.Entry<Tensor, RowSplit>> rowSplits,
                           List<Map.Entry<Predicate<Tensor>, RowSplit>> rowSplitRules, boolean distributed) {
        if (paramLists.isEmpty()) {
            throw new IllegalArgumentException("params must not be empty: add at least one group");
        }
        Map<Long, RowSplit> splitByIdentity = RowSplitRules.byIdentity(rowSplits);
        Map<Long, String> splitShapes = RowSplitRules.shapesByIdentity(rowSplits);
        OrthogonalizerSelection selection = new OrthogonalizerSelection();
        FusedKernelSelection fusedKernels = new FusedKernelSelection();
        // Shared by every parameter's stages: reusable tensors per shape, NorMuon's workspaces.
        Scratch scratch = new Scratch();
        NeuronNormalization normalization = new NeuronNormalization();
        List<UpdatePlan> plans = new ArrayList<>();
        Map<Long, String> seen = new HashMap<>();
        int position = 0;
        List<MuonGroup> groups = new ArrayList<>();
        for (int gi = 0; gi < paramLists.size(); gi++) {
            List<Tensor> params = paramLists.get(gi);
            if (params.isEmpty()) {
                throw new IllegalArgumentException("params must not be empty: group " + gi + " has none");
            }
            MuonConfig config = configs.get(gi);
            List<ParameterState> states = new ArrayList<>();
            for (int pi = 0; pi < params.size(); pi++) {
                Tensor p = params.get(pi);
                String name = names != null ? names.get(position) : "parameter " + pi + " of group " + gi;
                String label = names != null ? "parameter '" + name + "'" : name;
                position++;
                if (p == null || !p.defined()) {
                    throw new IllegalArgumentException(label + " is null or undefined");
                }
                String previous = seen.putIfAbsent(ParameterState.identityOf(p), label);
                if (previous != null) {
                    throw new IllegalArgumentException("duplicate parameter: " + label
                            + " is the same tensor as " + previous);
                }
                if (!p.is_leaf()) {
                    throw new IllegalArgumentException(label + " is not a leaf tensor (it was computed from "
                            + "others); Muon updates parameters in place and takes leaf tensors only, as "
                            + "PyTorch's optimizers do");
                }
                MatrixLayout layout = MatrixLayout.of(p, config, label);
                if (distributed && !p.is_contiguous()) {
                    throw new IllegalArgumentException(label + " is not contiguous; a distributed optimizer "
                            + "broadcasts parameters in place and needs contiguous ones");
                }
                RowSplit split = splitByIdentity.get(ParameterState.identityOf(p));
                splitShapes.remove(ParameterState.identityOf(p));
                for (int r = 0; split == null && r < rowSplitRules.size(); r++) {
                    if (rowSplitRules.get(r).getKey().test(p)) {
                        split = rowSplitRules.get(r).getValue();
                    }
                }
                if (split != null && layout.batch() != 0 && !p.is_contiguous()) {
                    // Its equal row blocks are one view of the whole stack, which only contiguous memory has.
                    throw new IllegalArgumentException(label + " is a stack of matrices with row split " + split
                            + " and must be contiguous; it is not");
                }
                RowBlocks blocks = split == null ? null : new RowBlocks(split, layout, label);
                FusedUpdateKernels fused = fusedKernels.forParameter(config, layout.matrixView(p), label);
                ParameterState state = new ParameterState(p, layout, selection.forParameter(config,
                        p.device()), name, label, fused, blocks, UpdateRecipe.of(config).buffers());
                states.add(state);
                plans.add(UpdatePlan.of(config, state, scratch, normalization));
            }
            groups.add(new MuonGroup(config, states));
        }
        if (!splitShapes.isEmpty()) {
            throw new IllegalArgumentException("rowSplit names a tensor of shape "
                    + splitShapes.values().iterator().next() + " that is not a parameter of this optimizer");
        }
        List<ParameterState> all = new ArrayList<>();
        groups.forEach(g -> all.addAll(g.params));
        List<Tensor> tensors = new ArrayList<>();
        List<String> labels = new ArrayList<>();
        all.forEach(state -> {
            tensors.add(state.param);
            labels.add(state.label);
        });
        checkNoSharedMemory(tensors, labels,
                "Muon updates each parameter in place, so parameters must not overlap");
        return new MuonAssembly(List.copyOf(groups), List.copyOf(all), new PlannedUpdates(all, plans));
    }

    /**
     * Refuses two tensors whose memory overlaps (two leaves over one storage, such as slices of one buffer): each is
     * updated in place, so the second update would start from the first one's result. Also {@link MuonUpdate}'s,
     * over its parameters and momentum buffers.
     *
     * @param tensors the tensors updated in place
     * @param labels  how a message names each
     * @param why     the message's reason, after the two labels
     */
    static void checkNoSharedMemory(List<Tensor> tensors, List<String> labels, String why) {
        long[][] ranges = new long[tensors.size()][];
        for (int i = 0; i < tensors.size(); i++) {
            Tensor p = tensors.get(i);
            org.bytedeco.javacpp.Pointer data = p.data_ptr();
            if (data == null || data.isNull()) {
                // No memory behind it (a tensor on the meta device, as for counting state): nothing can overlap.
                ranges[i] = new long[]{0, 0, i};
                continue;
            }
            long start = data.address();
            long[] sizes = p.sizes().vec().get();
            long[] strides = p.strides().vec().get();
            long end = start + p.element_size();
            for (int d = 0; d < sizes.length; d++) {
                if (sizes[d] == 0) {
                    end = start;
                    break;
                }
                end += (sizes[d] - 1) * Math.abs(strides[d]) * p.element_size();
            }
            ranges[i] = new long[]{start, end, i};
        }
        Arrays.sort(ranges, Comparator.comparingLong(r -> r[0]));
        // Sorted by start, a range overlaps an earlier one exactly when it starts before the furthest end so far.
        long[] furthest = null;
        for (long[] range : ranges) {
            if (range[1] == range[0]) {
                continue;
            }
            if (furthest != null && range[0] < furthest[1]) {
                String a = labels.get((int) Math.min(furthest[2], range[2]));
                String b = labels.get((int) Math.max(furthest[2], range[2]));
                throw new IllegalArgumentException(b + " shares memory with " + a + "; " + why);
            }
            if (furthest == null || range[1] > furthest[1]) {
                furthest = range;
            }
        }
    }
}
