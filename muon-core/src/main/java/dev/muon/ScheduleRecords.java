package dev.muon;

import dev.muon.schedule.ScheduleRecord;

/** How optimizers keep and persist their {@link ScheduleRecord}: one rule for {@link Muon} and {@link MuonAdamW}. */
final class ScheduleRecords {
    private static final System.Logger LOG = System.getLogger(ScheduleRecords.class.getName());

    private ScheduleRecords() {
    }

    /**
     * Checks that a record fits an optimizer with {@code groups} groups.
     *
     * @throws IllegalArgumentException if it holds another number of base lrs
     */
    static ScheduleRecord checked(ScheduleRecord record, int groups) {
        java.util.Objects.requireNonNull(record, "record must not be null");
        if (record.initialLrs().length != groups) {
            throw new IllegalArgumentException("record must hold one base lr per group (" + groups + "), got "
                    + record.initialLrs().length);
        }
        return record;
    }

    /**
     * The record an optimizer keeps after restoring a state that holds {@code saved}: the saved record; for a state
     * without one (a PyTorch state file, or a state saved before any scheduler ran), the optimizer's own record if
     * a scheduler made one before, else the restored lrs as base lrs, with a note that a schedule then scales
     * those.
     */
    static ScheduleRecord afterLoad(ScheduleRecord saved, ScheduleRecord current, double[] loadedLrs,
                                    String source) {
        if (saved != null) {
            return saved;
        }
        if (current != null) {
            // A scheduler made before the load recorded the run's base lrs: they stay right.
            return current;
        }
        LOG.log(System.Logger.Level.INFO, source + " holds no schedule record: a scheduler made now scales the "
                + "restored lrs "
                + java.util.Arrays.toString(loadedLrs) + "; pass the run's base lrs to LrScheduler.of(optimizer, "
                + "schedule, baseLrs...) to resume the schedule exactly");
        return ScheduleRecord.unknown(loadedLrs);
    }
}
