package dev.muon.schedule;

import dev.muon.internal.TorchNatives;
import java.util.Arrays;
import java.util.Objects;

/**
 * What an optimizer keeps of the schedule that drives it, as PyTorch keeps {@code initial_lr} in its param
 * groups: each group's initial (base) lr, which the schedule scales, and which schedule it is, as a typed value: a
 * built-in {@link LrSchedule} itself (its fields, which a resume rebuilds it from), or only that it was a custom one
 * or is not known. The first {@link LrScheduler} made for an optimizer records it; {@link dev.muon.MuonAdamW} and
 * {@link dev.muon.Muon} save it in checkpoints and restore it on load, so a scheduler made after a load scales the
 * right base lrs.
 *
 * @param initialLrs each group's base lr, finite and {@code >= 0}
 * @param source     what is known of the schedule
 * @param schedule   the built-in schedule for {@link Source#BUILT_IN}, else null
 */
public record ScheduleRecord(double[] initialLrs, Source source, LrSchedule schedule) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** What a record knows of its schedule. */
    public enum Source {
        /** One of {@link LrSchedule}'s built-in schedules, held as itself. */
        BUILT_IN,
        /** A schedule of the user's (a lambda): its base lrs are known, the function is not. */
        CUSTOM,
        /**
         * Nothing: the record an optimizer makes when it restores a state that holds none (a PyTorch state file, or
         * a checkpoint saved before any scheduler ran). Its base lrs are the restored lrs, and a scheduler made
         * afterwards with any schedule raises no warning.
         */
        UNKNOWN;

        static {
            TorchNatives.extract();
        }
    }

    /**
     * Validates and copies.
     *
     * @throws IllegalArgumentException if a base lr is not finite and {@code >= 0}, or the schedule is given for a
     *                                  source other than {@link Source#BUILT_IN}, missing for it, or not built in
     */
    public ScheduleRecord {
        Objects.requireNonNull(initialLrs, "initialLrs must not be null");
        Objects.requireNonNull(source, "source must not be null");
        initialLrs = initialLrs.clone();
        for (int g = 0; g < initialLrs.length; g++) {
            if (!Double.isFinite(initialLrs[g]) || !(initialLrs[g] >= 0)) {
                throw new IllegalArgumentException("initialLrs[" + g + "] must be finite and >= 0, got "
                        + initialLrs[g]);
            }
        }
        if ((source == Source.BUILT_IN) != (schedule != null)) {
            throw new IllegalArgumentException("schedule must be set exactly for a BUILT_IN record, got "
                    + (schedule == null ? "none" : "one") + " for " + source);
        }
        if (schedule != null && !LrSchedule.isBuiltIn(schedule)) {
            throw new IllegalArgumentException("schedule must be one of LrSchedule's built-in schedules, got a "
                    + schedule.getClass().getName());
        }
    }

    /**
     * The record of a schedule: {@link Source#BUILT_IN} with the schedule for a built-in one, {@link Source#CUSTOM}
     * for any other.
     *
     * @param initialLrs each group's base lr
     * @param schedule   the schedule
     * @return the record
     */
    public static ScheduleRecord of(double[] initialLrs, LrSchedule schedule) {
        Objects.requireNonNull(schedule, "schedule must not be null");
        return LrSchedule.isBuiltIn(schedule) ? new ScheduleRecord(initialLrs, Source.BUILT_IN, schedule)
                : new ScheduleRecord(initialLrs, Source.CUSTOM, null);
    }

    /**
     * The record of restored lrs whose schedule is not known ({@link Source#UNKNOWN}).
     *
     * @param initialLrs each group's base lr
     * @return the record
     */
    public static ScheduleRecord unknown(double[] initialLrs) {
        return new ScheduleRecord(initialLrs, Source.UNKNOWN, null);
    }

    /**
     * Each group's base lr.
     *
     * @return a copy
     */
    @Override
    public double[] initialLrs() {
        return initialLrs.clone();
    }

    /**
     * The schedule as a message shows it: a built-in one with its fields, else {@code custom} or {@code unknown}.
     *
     * @return the text
     */
    public String describe() {
        return switch (source) {
            case BUILT_IN -> schedule.toString();
            case CUSTOM -> "custom";
            case UNKNOWN -> "unknown (restored from a state without a schedule record)";
        };
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ScheduleRecord r && Arrays.equals(initialLrs, r.initialLrs) && source == r.source
                && Objects.equals(schedule, r.schedule);
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(initialLrs), source, schedule);
    }

    @Override
    public String toString() {
        return "ScheduleRecord" + Arrays.toString(initialLrs) + " " + describe();
    }
}
