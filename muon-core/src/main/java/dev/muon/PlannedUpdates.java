package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.util.List;
import java.util.function.IntPredicate;

/**
 * Each Muon parameter's stages ({@link UpdatePlan}, chosen at build) and its update in progress
 * ({@link ParameterUpdate}, reused every step), in the optimizer's order, and how a step runs them: per parameter,
 * or per same-shape batch with one orthogonalization for all its members.
 */
final class PlannedUpdates {
    private final List<ParameterUpdate> updates;
    private final List<UpdatePlan> plans;

    PlannedUpdates(List<ParameterUpdate> updates, List<UpdatePlan> plans) {
        this.updates = List.copyOf(updates);
        this.plans = List.copyOf(plans);
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
            ParameterUpdate.StepScalars scalars = new ParameterUpdate.StepScalars(group.config);
            for (int j = 0; j < group.params.size(); j++, i++) {
                Tensor grad = grads.get(i);
                if (grad != null && !group.batched(j) && updatedHere.test(i)) {
                    update(i, grad, group.config, scalars);
                }
            }
            for (SameShapeBatch batch : group.batches()) {
                batched += updateBatch(batch, grads, group.config, scalars);
            }
        }
        return batched;
    }

    /**
     * The scaled lr a parameter's last update applied (its first row block's, for a row split), computed once by
     * its lr stage; NaN before its first update since this optimizer was built or restored.
     */
    double appliedLr(int index) {
        return updates.get(index).appliedLr;
    }

    /** Forgets every applied lr: a restored state does not hold the lrs of the last updates. */
    void forgetAppliedLrs() {
        updates.forEach(update -> update.appliedLr = Double.NaN);
    }

    /** Runs a parameter's stages ({@link UpdatePlan}): its parameter stages, then its block stages per block. */
    private void update(int index, Tensor grad, MuonConfig config, ParameterUpdate.StepScalars scalars) {
        ParameterUpdate update = prepare(index, grad, config, scalars, null);
        try {
            if (update.state.matrix.numel() == 0) {
                // Nothing to orthogonalize or update; the (empty) momentum buffer exists, as in PyTorch's Muon.
                return;
            }
            for (ParameterUpdate.Block block : update.blocks) {
                update.block = block;
                for (UpdateStage stage : plans.get(index).blockStages()) {
                    stage.run(update);
                }
            }
        } finally {
            update.clear();
        }
    }

    /** Sets up a parameter's update for this step and runs its parameter stages (momentum, layout). */
    private ParameterUpdate prepare(int index, Tensor grad, MuonConfig config, ParameterUpdate.StepScalars scalars,
                                    Tensor target) {
        ParameterUpdate update = updates.get(index);
        update.config = config;
        update.scalars = scalars;
        update.grad = update.state.layout.matrixView(grad);
        update.target = target;
        for (UpdateStage stage : plans.get(index).parameterStages()) {
            stage.run(update);
        }
        return update;
    }

    /**
     * The batched form of {@link #update} for the members of {@code batch} that have a gradient (all of which this
     * process updates): each member's parameter stages leave its {@code U} in its slice of the batch's stack, one
     * call orthogonalizes the stack, and each member's block stages after the orthogonalization apply its slice.
     * With fewer than {@link SameShapeBatch#MIN_PARAMETERS} gradients this step, they take the per-parameter path.
     *
     * @return how many parameters were orthogonalized in a batch
     */
    private int updateBatch(SameShapeBatch batch, List<Tensor> grads, MuonConfig config,
                            ParameterUpdate.StepScalars scalars) {
        int count = 0;
        for (int k = 0; k < batch.positions.length; k++) {
            Tensor grad = grads.get(batch.positions[k]);
            if (grad != null) {
                batch.activePositions[count] = batch.positions[k];
                batch.activeGrads[count] = grad;
                count++;
            }
        }
        if (count < SameShapeBatch.MIN_PARAMETERS) {
            for (int k = 0; k < count; k++) {
                update(batch.activePositions[k], batch.activeGrads[k], config, scalars);
            }
            batch.release(count);
            return 0;
        }
        Tensor stack = batch.stack(count);
        for (int k = 0; k < count; k++) {
            prepare(batch.activePositions[k], batch.activeGrads[k], config, scalars, stack.select(0, k));
        }
        // Every member shares the orthogonalizer (the batch's key), so this is the same function, applied to each
        // slice on its own; the result is a view of its workspace, used up before its next call.
        Tensor o = batch.members.get(0).orthogonalizer.orthogonalize(stack);
        for (int k = 0; k < count; k++) {
            int index = batch.activePositions[k];
            ParameterUpdate update = updates.get(index);
            try {
                // A batch member is a plain matrix: one block.
                update.block = update.blocks.get(0);
                update.block.o = o.select(0, k);
                for (UpdateStage stage : plans.get(index).afterOrthogonalize()) {
                    stage.run(update);
                }
            } finally {
                update.clear();
            }
        }
        batch.release(count);
        return count;
    }
}
