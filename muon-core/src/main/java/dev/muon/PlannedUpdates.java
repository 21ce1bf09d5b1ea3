package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.util.Arrays;
import java.util.List;
import java.util.function.IntPredicate;

/**
 * Each Muon parameter's {@link UpdatePlan} (chosen at build), in the optimizer's order, and how a step runs them:
 * in group order, a parameter on its own or a same-shape batch at its first member's place, with one
 * orthogonalization for all its members. So a step that fails part-way has updated exactly the parameters before
 * the failing one (or before the failing batch's first member) in group order.
 */
final class PlannedUpdates {
    private final List<ParameterState> states;
    private final List<UpdatePlan> plans;
    /** The scaled lr of each parameter's last update (its first block's), NaN before its first. */
    private final double[] appliedLrs;

    PlannedUpdates(List<ParameterState> states, List<UpdatePlan> plans) {
        this.states = List.copyOf(states);
        this.plans = List.copyOf(plans);
        this.appliedLrs = new double[states.size()];
        forgetAppliedLrs();
    }

    /**
     * Updates every parameter of the groups that has a gradient and that this process updates.
     *
     * @param grads       the checked gradients, one per parameter in the optimizer's order, null where none
     * @param updatedHere whether this process updates the parameter at a position (distributed: owns it)
     * @return how many parameters were orthogonalized in same-shape batches
     */
    int run(List<MuonGroup> groups, List<Tensor> grads, IntPredicate updatedHere) {
        int i = 0;
        int batched = 0;
        for (MuonGroup group : groups) {
            UpdateSlots.Step step = new UpdateSlots.Step(group.config());
            for (int j = 0; j < group.params.size(); j++, i++) {
                SameShapeBatch batch = group.batchFirstAt(j);
                if (batch != null) {
                    batched += updateBatch(batch, grads, step);
                    continue;
                }
                Tensor grad = grads.get(i);
                if (grad != null && !group.batched(j) && updatedHere.test(i)) {
                    update(i, grad, step);
                }
            }
        }
        return batched;
    }

    /** The plans' set-up of their parameters, once the optimizer is complete ({@link UpdatePlan#atBuild}). */
    void atBuild() {
        for (int i = 0; i < states.size(); i++) {
            plans.get(i).atBuild(states.get(i));
        }
    }

    /**
     * The scaled lr a parameter's last update applied (its first row block's, for a row split); NaN before its
     * first update since this optimizer was built or restored.
     */
    double appliedLr(int index) {
        return appliedLrs[index];
    }

    /** Forgets every applied lr: a restored state does not hold the lrs of the last updates. */
    void forgetAppliedLrs() {
        Arrays.fill(appliedLrs, Double.NaN);
    }

    /** One parameter's whole update: before, the orthogonalization of each block, after, and the finish. */
    private void update(int index, Tensor grad, UpdateSlots.Step step) {
        ParameterState state = states.get(index);
        UpdatePlan plan = plans.get(index);
        List<UpdateSlots.Block> blocks = plan.beforeOrthogonalize(state, grad, null, step);
        if (state.matrix.numel() == 0) {
            // Nothing to orthogonalize or update; the (empty) momentum buffer exists, as in PyTorch's Muon.
            return;
        }
        for (int b = 0; b < blocks.size(); b++) {
            UpdateSlots.Block block = blocks.get(b);
            double lr = plan.afterOrthogonalize(state, block, state.orthogonalizer.orthogonalize(block.u()), step);
            if (b == 0) {
                appliedLrs[index] = lr;
            }
        }
        plan.finish(state, step);
    }

    /**
     * The batched form of {@link #update} for the members of {@code batch} that have a gradient (all of which this
     * process updates): each member's momentum leaves its {@code U} in its slice of the batch's stack, one call
     * orthogonalizes the stack, and each member's part after the orthogonalization applies its slice. With fewer
     * than {@link SameShapeBatch#MIN_PARAMETERS} gradients this step, they take the per-parameter path.
     *
     * @return how many parameters were orthogonalized in a batch
     */
    private int updateBatch(SameShapeBatch batch, List<Tensor> grads, UpdateSlots.Step step) {
        int count = 0;
        for (int k = 0; k < batch.positions.length; k++) {
            Tensor grad = grads.get(batch.positions[k]);
            if (grad != null) {
                batch.activePositions[count] = batch.positions[k];
                batch.activeGrads[count] = grad;
                count++;
            }
        }
        try {
            if (count < SameShapeBatch.MIN_PARAMETERS) {
                for (int k = 0; k < count; k++) {
                    update(batch.activePositions[k], batch.activeGrads[k], step);
                }
                return 0;
            }
            Tensor stack = batch.stack(count);
            UpdateSlots.Block[] blocks = new UpdateSlots.Block[count];
            for (int k = 0; k < count; k++) {
                int index = batch.activePositions[k];
                // A batch member is a plain matrix: one block.
                blocks[k] = plans.get(index).beforeOrthogonalize(states.get(index), batch.activeGrads[k],
                        stack.select(0, k), step).get(0);
            }
            // Every member shares the orthogonalizer (the batch's key), so this is the same function, applied to
            // each slice on its own; the result is a view of its workspace, used up before its next call.
            Tensor o = batch.members.get(0).orthogonalizer.orthogonalize(stack);
            for (int k = 0; k < count; k++) {
                int index = batch.activePositions[k];
                UpdatePlan plan = plans.get(index);
                appliedLrs[index] = plan.afterOrthogonalize(states.get(index), blocks[k], o.select(0, k), step);
                plan.finish(states.get(index), step);
            }
            return count;
        } finally {
            batch.release(count);
        }
    }
}
