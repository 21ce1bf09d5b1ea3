package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntPredicate;

/**
 * Each Muon parameter's {@link UpdatePlan} (chosen at build), in the optimizer's order, and how a step runs them:
 * in group order, a parameter on its own or a same-shape batch at its first member's place, with one
 * orthogonalization for all its members. So a step that fails part-way has updated exactly the parameters before
 * the failing one (or before the failing batch's first member) in group order.
 *
 * <p>Where parameters keep their state away from them ({@link StateStorage}), each unit of the step (a parameter or
 * a batch) has its buffers brought in from its {@link StateHome} ({@link StateHomes}) before its update and sent back after it, and the
 * next unit's are started on their way ({@link StateHome#prefetch}) before this unit's orthogonalization: at most
 * two units' buffers are resident at once. The update in between is the same computation.
 */
final class PlannedUpdates {
    private final List<ParameterState> states;
    private final List<UpdatePlan> plans;
    /** The scaled lr of each parameter's last update (its first block's), NaN before its first. */
    private final double[] appliedLrs;
    /** This step's units, in order; reused. */
    private final List<Unit> units = new ArrayList<>();

    /**
     * One unit of a step: a parameter on its own ({@code batch} null) or the {@code count} active members of a
     * same-shape batch ({@link SameShapeBatch#activePositions}).
     */
    private record Unit(UpdateSlots.Step step, int index, Tensor grad, SameShapeBatch batch, int count) {
    }

    PlannedUpdates(List<ParameterState> states, List<UpdatePlan> plans) {
        this.states = List.copyOf(states);
        this.plans = List.copyOf(plans);
        this.appliedLrs = new double[states.size()];
        forgetAppliedLrs();
    }

    /**
     * Plans a step: its units, every parameter of the groups that has a gradient and that this process updates,
     * and brings in the first unit's buffers. Changes nothing: if a buffer cannot be brought in (a state file
     * altered since), nothing is left resident and the optimizer is as it was, so the caller runs this before the
     * part of the step that may leave it part-way. {@link #run} follows.
     *
     * @param grads       the checked gradients, one per parameter in the optimizer's order, null where none
     * @param updatedHere whether this process updates the parameter at a position (distributed: owns it)
     * @param homes       where each parameter keeps its state between updates
     * @throws dev.muon.state.StateFileException naming the buffer, if the first unit's stored state is not what
     *                                           this run wrote
     */
    void prepare(List<MuonGroup> groups, List<Tensor> grads, IntPredicate updatedHere, StateHomes homes) {
        releaseUnits();
        int i = 0;
        for (MuonGroup group : groups) {
            UpdateSlots.Step step = new UpdateSlots.Step(group.config());
            for (int j = 0; j < group.params.size(); j++, i++) {
                SameShapeBatch batch = group.batchFirstAt(j);
                if (batch != null) {
                    addBatch(batch, grads, step);
                    continue;
                }
                Tensor grad = grads.get(i);
                if (grad != null && !group.batched(j) && updatedHere.test(i)) {
                    units.add(new Unit(step, i, grad, null, 0));
                }
            }
        }
        if (!units.isEmpty()) {
            try {
                forEachHome(units.get(0), homes, HomeCall.BRING_IN_BEFORE_CHANGES);
            } catch (RuntimeException | Error e) {
                forEachHome(units.get(0), homes, HomeCall.ABANDON);
                releaseUnits();
                throw e;
            }
        }
    }

    /**
     * Updates the units {@link #prepare} planned, whose first has its buffers resident.
     *
     * @param homes where each parameter keeps its state between updates
     * @return how many parameters were orthogonalized in same-shape batches
     */
    int run(StateHomes homes) {
        int batched = 0;
        try {
            for (int u = 0; u < units.size(); u++) {
                Unit unit = units.get(u);
                Unit next = u + 1 < units.size() ? units.get(u + 1) : null;
                try {
                    if (u > 0) {
                        forEachHome(unit, homes, HomeCall.BRING_IN);
                    }
                    forEachHome(next, homes, HomeCall.PREFETCH);
                    batched += unit.batch == null ? update(unit.index, unit.grad, unit.step)
                            : updateBatch(unit.batch, unit.count, unit.step);
                    forEachHome(unit, homes, HomeCall.SEND_BACK);
                } catch (RuntimeException | Error e) {
                    forEachHome(unit, homes, HomeCall.ABANDON);
                    forEachHome(next, homes, HomeCall.ABANDON);
                    throw e;
                }
            }
            return batched;
        } finally {
            releaseUnits();
        }
    }

    /** Lets go of what {@link #prepare} planned and brought in, for a step that ends before {@link #run}. */
    void cancel(StateHomes homes) {
        if (!units.isEmpty()) {
            forEachHome(units.get(0), homes, HomeCall.ABANDON);
        }
        releaseUnits();
    }

    /** Lets go of the step's units: no handle on a gradient outlives the step. */
    private void releaseUnits() {
        for (Unit unit : units) {
            if (unit.batch != null) {
                unit.batch.release(unit.count);
            }
        }
        units.clear();
    }

    /**
     * Adds the members of {@code batch} that have a gradient (all of which this process updates) as one unit, or,
     * with fewer than {@link SameShapeBatch#MIN_PARAMETERS} gradients this step, each as a unit of its own.
     */
    private void addBatch(SameShapeBatch batch, List<Tensor> grads, UpdateSlots.Step step) {
        int count = 0;
        for (int k = 0; k < batch.positions.length; k++) {
            Tensor grad = grads.get(batch.positions[k]);
            if (grad != null) {
                batch.activePositions[count] = batch.positions[k];
                batch.activeGrads[count] = grad;
                count++;
            }
        }
        if (count >= SameShapeBatch.MIN_PARAMETERS) {
            units.add(new Unit(step, -1, null, batch, count));
            return;
        }
        for (int k = 0; k < count; k++) {
            units.add(new Unit(step, batch.activePositions[k], batch.activeGrads[k], null, 0));
        }
        batch.release(count);
    }

    /** A unit's parameters by position: the one, or the batch's active members. */
    private static int member(Unit unit, int k) {
        return unit.batch == null ? unit.index : unit.batch.activePositions[k];
    }

    private static int members(Unit unit) {
        return unit.batch == null ? 1 : unit.count;
    }

    /** What a step asks of the home of each member of a unit. */
    private enum HomeCall {
        BRING_IN_BEFORE_CHANGES, BRING_IN, PREFETCH, SEND_BACK, ABANDON;

        void on(StateHome home, ParameterState state) {
            switch (this) {
                case BRING_IN_BEFORE_CHANGES -> home.bringIn(state, true);
                case BRING_IN -> home.bringIn(state, false);
                case PREFETCH -> home.prefetch(state);
                case SEND_BACK -> home.sendBack(state);
                case ABANDON -> home.abandon(state);
            }
        }
    }

    /**
     * Asks the home of each member of a unit, in member order, for one call; members that keep their state with
     * them have no home. A null unit (no next one) asks nothing.
     */
    private void forEachHome(Unit unit, StateHomes homes, HomeCall call) {
        for (int k = 0; unit != null && k < members(unit); k++) {
            int index = member(unit, k);
            StateHome home = homes.of(index);
            if (home != null) {
                call.on(home, states.get(index));
            }
        }
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

    /**
     * One parameter's whole update: before, the orthogonalization of each block, after, and the finish.
     *
     * @return 0: no parameter was orthogonalized in a batch
     */
    private int update(int index, Tensor grad, UpdateSlots.Step step) {
        double lr = updateAlone(states.get(index), plans.get(index), grad, step);
        if (!Double.isNaN(lr)) {
            appliedLrs[index] = lr;
        }
        return 0;
    }

    /**
     * One parameter's whole update on its own, with no batch: before, the orthogonalization of each block, after,
     * and the finish. Also {@link MuonUpdate}'s, whose caller owns the state.
     *
     * @return the scaled lr of its first block, NaN for an empty parameter (nothing applied)
     */
    static double updateAlone(ParameterState state, UpdatePlan plan, Tensor grad, UpdateSlots.Step step) {
        List<UpdateSlots.Block> blocks = plan.beforeOrthogonalize(state, grad, null, step);
        if (state.matrix.numel() == 0) {
            // Nothing to orthogonalize or update; the (empty) momentum buffer exists, as in PyTorch's Muon.
            return Double.NaN;
        }
        double first = Double.NaN;
        for (int b = 0; b < blocks.size(); b++) {
            UpdateSlots.Block block = blocks.get(b);
            double lr = plan.afterOrthogonalize(state, block, state.orthogonalizer.orthogonalize(block.u()), step);
            if (b == 0) {
                first = lr;
            }
        }
        plan.finish(state, step);
        return first;
    }

    /**
     * The batched form of {@link #update} for the {@code count} active members of {@code batch}
     * ({@link SameShapeBatch#activePositions}, at least {@link SameShapeBatch#MIN_PARAMETERS}): each member's
     * momentum leaves its {@code U} in its slice of the batch's stack, one call orthogonalizes the stack, and each
     * member's part after the orthogonalization applies its slice.
     *
     * @return how many parameters were orthogonalized in a batch
     */
    private int updateBatch(SameShapeBatch batch, int count, UpdateSlots.Step step) {
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
    }
}
