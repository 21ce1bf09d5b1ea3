package dev.muon.schedule;

import dev.muon.internal.TorchNatives;
import java.util.Arrays;
import java.util.Objects;

/**
 * Applies an {@link LrSchedule} to every group of a {@link TrainingOptimizer}, each relative to its own base lr:
 * {@code lr(g) = base(g)·factor(step)}. It keeps no state besides the base lrs, so after a resume
 * {@code apply(optimizer.stepCount())} gives exactly the lrs of an uninterrupted run.
 *
 * <p>The base lrs live in the optimizer's {@link ScheduleRecord}: the first scheduler made for an optimizer
 * records its current lrs (or the ones passed), {@code save} keeps the record and {@code load} restores it, and
 * every {@link #apply} reads them from the record, so a scheduler made before or after a load scales the same base
 * lrs (a copy taken when the scheduler was made would put the builder's lrs back after a resume). One group's base
 * lr is changed with {@link #setBaseLr}, which leaves every other group's; the optimizer's own {@code setLr} is
 * overwritten by the next {@code apply}. {@link #resume} rebuilds a built-in schedule from the record. libtorch's
 * own optimizers, which keep no record, are driven through {@link LibtorchOptimizer#of} with the base lrs the
 * scheduler holds.
 *
 * <pre>{@code
 * LrScheduler lrs = LrScheduler.of(optimizer, LrSchedule.warmupCosine(100, 5_000, 0.1));
 * for (...) {
 *     lrs.apply(optimizer.stepCount());
 *     ...
 *     optimizer.step();
 * }
 * }</pre>
 */
public final class LrScheduler {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private static final System.Logger LOG = System.getLogger(LrScheduler.class.getName());
    private final TrainingOptimizer optimizer;
    private final LrSchedule schedule;
    /** The base lrs of an optimizer that keeps no record; one that does holds them in its record. */
    private final double[] baseLrs;

    private LrScheduler(TrainingOptimizer optimizer, LrSchedule schedule, double[] baseLrs) {
        this.optimizer = optimizer;
        this.schedule = schedule;
        this.baseLrs = baseLrs;
    }

    /**
     * A scheduler whose base lrs are the optimizer's recorded ones ({@link TrainingOptimizer#scheduleRecord()}),
     * or, when it has none yet, its current lrs, which are then recorded. So a scheduler made after a
     * {@code load} scales the base lrs the checkpoint holds, not the scheduled lrs of the saved step, whenever it
     * is made. If the record names another schedule than {@code schedule}, a WARNING says so (the run goes on
     * with {@code schedule}).
     *
     * @param optimizer the optimizer
     * @param schedule  the schedule
     * @return the scheduler
     * @throws NullPointerException if an argument is null
     */
    public static LrScheduler of(TrainingOptimizer optimizer, LrSchedule schedule) {
        Objects.requireNonNull(optimizer, "optimizer must not be null");
        Objects.requireNonNull(schedule, "schedule must not be null");
        java.util.Optional<ScheduleRecord> record = optimizer.scheduleRecord();
        if (record.isPresent() && record.get().initialLrs().length == optimizer.groupCount()) {
            ScheduleRecord now = ScheduleRecord.of(record.get().initialLrs(), schedule);
            ScheduleRecord was = record.get();
            boolean same = was.source() == now.source() && java.util.Objects.equals(was.schedule(), now.schedule());
            if (!same && was.source() != ScheduleRecord.Source.UNKNOWN) {
                LOG.log(System.Logger.Level.WARNING, "LrScheduler: the optimizer was scheduled by "
                        + was.describe() + " and is now scheduled by " + now.describe());
            }
            return create(optimizer, schedule, record.get().initialLrs());
        }
        double[] base = new double[optimizer.groupCount()];
        for (int g = 0; g < base.length; g++) {
            base[g] = optimizer.lr(g);
        }
        return of(optimizer, schedule, base);
    }

    /**
     * A scheduler with explicit base lrs, one per group; they are recorded in the optimizer (and so in its
     * checkpoints).
     *
     * @param optimizer the optimizer
     * @param schedule  the schedule
     * @param baseLrs   the base lr of each group, finite and {@code >= 0}
     * @return the scheduler
     * @throws IllegalArgumentException if the count differs from the group count or a value is invalid
     */
    public static LrScheduler of(TrainingOptimizer optimizer, LrSchedule schedule, double... baseLrs) {
        Objects.requireNonNull(optimizer, "optimizer must not be null");
        Objects.requireNonNull(schedule, "schedule must not be null");
        Objects.requireNonNull(baseLrs, "baseLrs must not be null");
        if (baseLrs.length != optimizer.groupCount()) {
            throw new IllegalArgumentException("baseLrs must hold one lr per group (" + optimizer.groupCount()
                    + "), got " + baseLrs.length);
        }
        for (int g = 0; g < baseLrs.length; g++) {
            if (!Double.isFinite(baseLrs[g]) || baseLrs[g] < 0) {
                throw new IllegalArgumentException("baseLrs[" + g + "] must be finite and >= 0, got "
                        + baseLrs[g]);
            }
        }
        optimizer.recordSchedule(ScheduleRecord.of(baseLrs, schedule));
        return create(optimizer, schedule, baseLrs);
    }

    /**
     * The scheduler an optimizer was running when it was saved: its recorded schedule (a built-in one) and base
     * lrs, restored by the optimizer's {@code load}.
     *
     * <pre>{@code
     * optimizer.load(Path.of("run.ckpt"));
     * LrScheduler lrs = LrScheduler.resume(optimizer);
     * }</pre>
     *
     * @param optimizer the optimizer
     * @return the scheduler
     * @throws IllegalStateException if the optimizer has no record, or its schedule is not a built-in one (then use
     *                               {@link #of(TrainingOptimizer, LrSchedule)} with the schedule)
     */
    public static LrScheduler resume(TrainingOptimizer optimizer) {
        Objects.requireNonNull(optimizer, "optimizer must not be null");
        ScheduleRecord record = optimizer.scheduleRecord().orElseThrow(() -> new IllegalStateException(
                "the optimizer holds no schedule record: no LrScheduler was made for it, and none was loaded"));
        if (record.source() != ScheduleRecord.Source.BUILT_IN) {
            throw new IllegalStateException("the optimizer's schedule is " + record.describe() + ", not a built-in "
                    + "one; pass the schedule to LrScheduler.of");
        }
        return create(optimizer, record.schedule(), record.initialLrs());
    }

    private static LrScheduler create(TrainingOptimizer optimizer, LrSchedule schedule, double[] baseLrs) {
        return new LrScheduler(optimizer, schedule, baseLrs.clone());
    }

    /**
     * Sets every group's lr for the step about to be taken, all or none: every new lr is checked before the
     * first one is set, so a schedule that yields an invalid lr for any group leaves every group's lr as it was.
     *
     * @param step the 0-based step, {@code >= 0} (for a {@link dev.muon.MuonAdamW}, its {@code stepCount()})
     * @throws IllegalArgumentException if {@code step < 0}, or if {@code base(g)·factor(step)} is not finite and
     *                                  {@code >= 0} for some group (naming the group, the step, the base lr and
     *                                  the factor); nothing changes then
     */
    public void apply(long step) {
        double factor = schedule.factor(step);
        double[] baseLrs = baseLrs();
        double[] next = new double[baseLrs.length];
        for (int g = 0; g < next.length; g++) {
            next[g] = baseLrs[g] * factor;
            // The interface's rule for setLr; checking it here for every group first is what makes apply
            // all-or-none (a later group's rejection used to arrive after earlier groups had changed).
            if (!Double.isFinite(next[g]) || !(next[g] >= 0)) {
                throw new IllegalArgumentException("lr of group " + g + " at step " + step
                        + " must be finite and >= 0, got " + next[g] + " (base lr " + baseLrs[g] + " × factor "
                        + factor + "); no group's lr was changed");
            }
        }
        double[] previous = new double[next.length];
        for (int g = 0; g < next.length; g++) {
            previous[g] = optimizer.lr(g);
        }
        int set = 0;
        try {
            for (; set < next.length; set++) {
                optimizer.setLr(set, next[set]);
            }
        } catch (RuntimeException e) {
            // An optimizer may have a stricter rule than the interface's; the lrs it held before were
            // accepted, so putting them back cannot fail the same way.
            for (int g = 0; g < set; g++) {
                optimizer.setLr(g, previous[g]);
            }
            throw e;
        }
    }

    /**
     * The schedule this scheduler applies.
     *
     * @return the schedule
     */
    public LrSchedule schedule() {
        return schedule;
    }

    /**
     * The base lr of a group.
     *
     * @param group the group index
     * @return its base lr
     * @throws IllegalArgumentException if the index is out of range
     */
    public double baseLr(int group) {
        checkGroup(group);
        return baseLrs()[group];
    }

    /**
     * Changes one group's base lr from the next {@link #apply} on, and records it in the optimizer (so a save keeps
     * it and a resume scales it); every other group's base lr stays.
     *
     * @param group the group index
     * @param lr    its new base lr, finite and {@code >= 0}
     * @throws IllegalArgumentException if the index is out of range or the lr is invalid; nothing changes then
     */
    public void setBaseLr(int group, double lr) {
        checkGroup(group);
        if (!Double.isFinite(lr) || lr < 0) {
            throw new IllegalArgumentException("lr of group " + group + " must be finite and >= 0, got " + lr);
        }
        double[] next = baseLrs();
        next[group] = lr;
        optimizer.recordSchedule(ScheduleRecord.of(next, schedule));
        baseLrs[group] = lr;
    }

    private void checkGroup(int group) {
        if (group < 0 || group >= baseLrs.length) {
            throw new IllegalArgumentException("group must be in [0, " + baseLrs.length + "), got " + group);
        }
    }

    /** The optimizer's recorded base lrs, or this scheduler's for an optimizer that keeps no record. */
    private double[] baseLrs() {
        java.util.Optional<ScheduleRecord> record = optimizer.scheduleRecord();
        if (record.isPresent() && record.get().initialLrs().length == baseLrs.length) {
            return record.get().initialLrs();
        }
        return baseLrs.clone();
    }

    /**
     * The base lrs and the schedule, for logs.
     *
     * @return a description
     */
    @Override
    public String toString() {
        return "LrScheduler" + Arrays.toString(baseLrs()) + " " + schedule;
    }
}
