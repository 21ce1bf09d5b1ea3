package dev.muon.schedule;

/**
 * What a training loop and a learning-rate schedule need from an optimizer: step, clear gradients, and read or
 * change each group's learning rate between steps. {@link dev.muon.Muon} and {@link dev.muon.MuonAdamW} implement
 * it, and {@link LibtorchOptimizer#of(org.bytedeco.pytorch.Optimizer)} adapts libtorch's own optimizers, so a loop
 * written against this interface works with any of them.
 *
 * <pre>{@code
 * TrainingOptimizer opt = MuonAdamW.dropIn(model.named_parameters(), new AdamWOptions(3e-4));
 * // or a libtorch optimizer for an A/B baseline: LibtorchOptimizer.of(new AdamW(model.parameters(), options))
 * LrScheduler lrs = LrScheduler.of(opt, LrSchedule.warmupCosine(100, 10_000, 0.1));
 * for (long step = 0; step < 10_000; step++) {
 *     lrs.apply(step);
 *     opt.zeroGrad();
 *     loss(model, batch).backward();
 *     opt.step();
 * }
 * }</pre>
 */
public interface TrainingOptimizer {

    /**
     * Performs one optimization step on every parameter that has a gradient.
     *
     * @throws IllegalStateException if a gradient does not fit its parameter (nothing changes then)
     */
    void step();

    /** Clears every gradient (sets it to undefined, as libtorch's {@code zero_grad()} does by default). */
    void zeroGrad();

    /**
     * The number of parameter groups.
     *
     * @return the group count
     */
    int groupCount();

    /**
     * The current learning rate of a group.
     *
     * @param group the group index, in {@code [0, groupCount())}
     * @return the lr
     * @throws IllegalArgumentException if the index is out of range
     */
    double lr(int group);

    /**
     * Sets a group's learning rate for the following steps.
     *
     * @param group the group index, in {@code [0, groupCount())}
     * @param lr    the new lr, finite and {@code >= 0}
     * @throws IllegalArgumentException if the index is out of range or the lr is invalid; nothing changes then
     */
    void setLr(int group, double lr);

    /**
     * The schedule this optimizer keeps ({@link ScheduleRecord}): recorded by the first {@link LrScheduler} made
     * for it, and restored by a load where the optimizer has checkpoints.
     *
     * @return the record; empty if no scheduler recorded one (and always, for an optimizer that keeps none)
     */
    default java.util.Optional<ScheduleRecord> scheduleRecord() {
        return java.util.Optional.empty();
    }

    /**
     * Keeps a schedule record; {@link LrScheduler} calls it. An optimizer without checkpoints keeps nothing, and
     * its schedulers work from the lrs they were given.
     *
     * @param record the record, with one base lr per group
     * @throws IllegalArgumentException if the record does not hold one base lr per group
     */
    default void recordSchedule(ScheduleRecord record) {
    }
}
