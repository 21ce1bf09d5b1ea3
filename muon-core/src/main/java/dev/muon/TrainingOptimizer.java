package dev.muon;

/**
 * What a training loop and a learning-rate schedule need from an optimizer: step, clear gradients, and read or
 * change each group's learning rate between steps. {@link Muon} and {@link MuonAdamW} implement it, so a loop
 * written against this interface works with either.
 *
 * <pre>{@code
 * TrainingOptimizer opt = MuonAdamW.dropIn(model.named_parameters(), new AdamWOptions(3e-4));
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
}
