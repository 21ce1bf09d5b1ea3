package dev.muon;

import dev.muon.internal.TorchNatives;
import java.util.Arrays;
import java.util.Objects;

/**
 * What an optimizer keeps of the schedule that drives it, as PyTorch keeps {@code initial_lr} in its param
 * groups: each group's initial (base) lr, which the schedule scales, and the schedule itself as text. The first
 * {@link LrScheduler} made for an optimizer records it; {@link MuonAdamW} and {@link Muon} save it in checkpoints
 * and restore it on load, so a scheduler made after a load scales the right base lrs.
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
