package dev.muon.schedule;

import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Optimizer;

import java.util.Objects;

/**
 * A libtorch optimizer ({@code AdamW}, {@code Adam}, {@code SGD}, …) seen as a {@link TrainingOptimizer}, so that
 * an {@link LrScheduler} drives it and a loop written for Muon runs it: each libtorch param group is a group, its lr
 * the group options' lr. It keeps no {@link ScheduleRecord} (libtorch's optimizers have nowhere to save one), so
 * its schedulers work from the lrs they are made with.
 *
 * <pre>{@code
 * AdamW baseline = new AdamW(model.parameters(), new AdamWOptions(3e-4));
 * LrScheduler lrs = LrScheduler.of(LibtorchOptimizer.of(baseline), LrSchedule.warmupCosine(100, 5_000, 0.1));
 * }</pre>
 */
public final class LibtorchOptimizer implements TrainingOptimizer {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private final Optimizer optimizer;

    private LibtorchOptimizer(Optimizer optimizer) {
        this.optimizer = Objects.requireNonNull(optimizer, "optimizer must not be null");
    }

    /**
     * A view of a libtorch optimizer; stepping through the view steps it.
     *
     * @param optimizer the libtorch optimizer
     * @return the view
     * @throws NullPointerException if {@code optimizer} is null
     */
    public static LibtorchOptimizer of(Optimizer optimizer) {
        return new LibtorchOptimizer(optimizer);
    }

    /** Steps the libtorch optimizer (inside a {@code NoGradGuard} and a {@code PointerScope}). */
    @Override
    public void step() {
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            optimizer.step();
        }
    }

    /** Clears the gradients, as libtorch's {@code zero_grad()}. */
    @Override
    public void zeroGrad() {
        optimizer.zero_grad();
    }

    /**
     * The number of libtorch param groups.
     *
     * @return the group count
     */
    @Override
    public int groupCount() {
        try (PointerScope scope = new PointerScope()) {
            return Math.toIntExact(optimizer.param_groups().size());
        }
    }

    /**
     * A param group's lr.
     *
     * @param group the group index
     * @return the lr
     * @throws IllegalArgumentException if the index is out of range
     */
    @Override
    public double lr(int group) {
        checkGroup(group);
        try (PointerScope scope = new PointerScope()) {
            return optimizer.param_groups().get(group).options().get_lr();
        }
    }

    /**
     * Sets a param group's lr.
     *
     * @param group the group index
     * @param lr    the lr, finite and {@code >= 0}
     * @throws IllegalArgumentException if the index or the lr is invalid; nothing changes then
     */
    @Override
    public void setLr(int group, double lr) {
        checkGroup(group);
        if (!Double.isFinite(lr) || !(lr >= 0)) {
            throw new IllegalArgumentException("lr must be finite and >= 0, got " + lr);
        }
        try (PointerScope scope = new PointerScope()) {
            optimizer.param_groups().get(group).options().set_lr(lr);
        }
    }

    private void checkGroup(int group) {
        int count = groupCount();
        if (group < 0 || group >= count) {
            throw new IllegalArgumentException("group must be in [0, " + count + "), got " + group);
        }
    }
}
