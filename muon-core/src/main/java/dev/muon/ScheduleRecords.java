package dev.muon;

/** How optimizers keep and persist their {@link ScheduleRecord}: one rule for {@link Muon} and {@link MuonAdamW}. */
final class ScheduleRecords {
    /** The schedule text of a record made on load from a checkpoint that held none. */
    static final String UNKNOWN = "unknown (from a checkpoint without a schedule record)";

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
     * The record an optimizer keeps after loading {@code saved}: the saved record; for a checkpoint written before
     * records were saved, the optimizer's own record if a scheduler made one before the load, else the loaded lrs
     * as base lrs, with a note that a schedule then scales those.
     */
    static ScheduleRecord afterLoad(ScheduleRecord saved, ScheduleRecord current, double[] loadedLrs,
                                    java.nio.file.Path path) {
        if (saved != null) {
            return saved;
        }
        if (current != null) {
            // A scheduler made before the load recorded the run's base lrs: they stay right.
            return current;
        }
        LOG.log(System.Logger.Level.INFO, "checkpoint " + path + " holds no schedule record (it was written "
                + "before they were saved): a scheduler made now scales the loaded lrs "
                + java.util.Arrays.toString(loadedLrs) + "; pass the run's base lrs to LrScheduler.of(optimizer, "
                + "schedule, baseLrs...) to resume the schedule exactly");
        return new ScheduleRecord(loadedLrs, UNKNOWN);
    }
}
