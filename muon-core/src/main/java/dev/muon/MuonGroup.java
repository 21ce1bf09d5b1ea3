package dev.muon;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntPredicate;

/**
 * One parameter group of a {@link Muon}: the configuration it was built with, its current hyperparameters (a
 * schedule or a restore changes them, and nothing else), its parameters, and its same-shape batches with, per
 * parameter, whether a batch serves it (planned once: ownership and shapes do not change).
 */
final class MuonGroup {
    /** The config the group was built with, its hyperparameters as they are now. */
    private MuonConfig config;
    final List<ParameterState> params;
    private List<SameShapeBatch> batches;
    private boolean[] batched;
    /** The batch whose first member is the group's {@code j}-th parameter, or null. */
    private SameShapeBatch[] batchFirstAt;

    MuonGroup(MuonConfig config, List<ParameterState> params) {
        this.config = config;
        this.params = params;
    }

    /** The group's config: as built, with its current hyperparameters. */
    MuonConfig config() {
        return config;
    }

    /**
     * Replaces the hyperparameters; the build settings, which chose every parameter's plan, stay.
     *
     * @param hyperparameters the new values
     * @throws IllegalArgumentException if a value breaks its rule (nothing changes then)
     */
    void hyperparameters(MuonHyperparameters hyperparameters) {
        config = config.withHyperparameters(hyperparameters);
    }

    /**
     * Plans this group's same-shape batches among the parameters this process updates.
     *
     * @param first       the position of the group's first parameter in the optimizer's order
     * @param updatedHere whether this process updates the parameter at a position (distributed: owns it)
     */
    void planBatches(int first, IntPredicate updatedHere) {
        batches = SameShapeBatch.plan(params, first, config, updatedHere);
        batched = new boolean[params.size()];
        batchFirstAt = new SameShapeBatch[params.size()];
        for (SameShapeBatch batch : batches) {
            for (int position : batch.positions) {
                batched[position - first] = true;
            }
            batchFirstAt[batch.positions[0] - first] = batch;
        }
    }

    /** The batches planned by {@link #planBatches}. */
    List<SameShapeBatch> batches() {
        return batches;
    }

    /** The batch whose first member (in group order) is the group's {@code j}-th parameter, or null. */
    SameShapeBatch batchFirstAt(int j) {
        return batchFirstAt[j];
    }

    /** Whether a batch serves the group's {@code j}-th parameter. */
    boolean batched(int j) {
        return batched[j];
    }

    /**
     * The same-shape batches the groups would form in one process, each as its members' positions in the
     * optimizer's order: the shard plan keeps each on one rank.
     */
    static List<List<Integer>> batchPositions(List<MuonGroup> groups) {
        List<List<Integer>> positions = new ArrayList<>();
        int first = 0;
        for (MuonGroup group : groups) {
            for (SameShapeBatch batch : SameShapeBatch.plan(group.params, first, group.config(), position -> true)) {
                List<Integer> members = new ArrayList<>();
                for (int position : batch.positions) {
                    members.add(position);
                }
                positions.add(members);
            }
            first += group.params.size();
        }
        return positions;
    }

    /** What every rank of a distributed optimizer must agree on of its groups: configs, shapes, dtypes, splits. */
    static String describe(List<MuonGroup> groups) {
        StringBuilder text = new StringBuilder();
        for (MuonGroup group : groups) {
            text.append(group.config()).append('\n');
            for (ParameterState state : group.params) {
                text.append(state.label).append(' ').append(Arrays.toString(state.layout.shape())).append(' ')
                        .append(state.param.scalar_type());
                if (state.rowBlocks != null) {
                    text.append(' ').append(state.rowBlocks.rule);
                }
                text.append('\n');
            }
        }
        return text.toString();
    }
}
