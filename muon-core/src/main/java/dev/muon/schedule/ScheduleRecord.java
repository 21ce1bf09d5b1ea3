package dev.muon.schedule;

import dev.muon.internal.TorchNatives;
import java.util.Arrays;
import java.util.Objects;

/**
 * What an optimizer keeps of the schedule that drives it, as PyTorch keeps {@code initial_lr} in its param
 * groups: each group's initial (base) lr, which the schedule scales, and the schedule itself as text. The first
 * {@link LrScheduler} made for an optimizer records it; {@link dev.muon.MuonAdamW} and {@link dev.muon.Muon} save it
 * in checkpoints and restore it on load, so a scheduler made after a load scales the right base lrs.
 *
 * @param initialLrs each group's base lr, finite and {@code >= 0}
 * @param schedule   the schedule's text ({@link LrSchedule#describe}), {@code "custom"} for one that is not built
 *                   in
 */
public record ScheduleRecord(double[] initialLrs, String schedule) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * The schedule text of the record an optimizer makes when it restores a state that holds none (a PyTorch state
     * file, or a checkpoint saved before any scheduler ran): its base lrs are the restored lrs, and no schedule is
     * known, so a scheduler made afterwards with any schedule raises no warning.
     */
    public static final String UNKNOWN_SCHEDULE = "unknown (restored from a state without a schedule record)";

    /**
     * Validates and copies.
     *
     * @throws IllegalArgumentException if a base lr is not finite and {@code >= 0}, or the text is blank or holds a
     *                                  line break
     */
    public ScheduleRecord {
        Objects.requireNonNull(initialLrs, "initialLrs must not be null");
        Objects.requireNonNull(schedule, "schedule must not be null");
        initialLrs = initialLrs.clone();
        for (int g = 0; g < initialLrs.length; g++) {
            if (!Double.isFinite(initialLrs[g]) || !(initialLrs[g] >= 0)) {
                throw new IllegalArgumentException("initialLrs[" + g + "] must be finite and >= 0, got "
                        + initialLrs[g]);
            }
        }
        if (schedule.isBlank() || schedule.contains("\n")) {
            throw new IllegalArgumentException("schedule must be one non-blank line, got '" + schedule + "'");
        }
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

    @Override
    public boolean equals(Object o) {
        return o instanceof ScheduleRecord r && Arrays.equals(initialLrs, r.initialLrs) && schedule.equals(r.schedule);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(initialLrs) + schedule.hashCode();
    }

    @Override
    public String toString() {
        return "ScheduleRecord" + Arrays.toString(initialLrs) + " " + schedule;
    }
}
