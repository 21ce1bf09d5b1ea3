package dev.muon.examples;

import dev.muon.MuonAdamW;

import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Keeps {@code MuonAdamW}'s assignment table (an INFO record, logged at every build) to one per model in the
 * examples' output: the later runs of the same model, other seeds and learning rates, build theirs quietly.
 */
public final class AssignmentLog {
    /** Held here: {@code java.util.logging} keeps loggers weakly, and a collected one forgets its level. */
    private static final Logger LOG = Logger.getLogger(MuonAdamW.class.getName());

    private AssignmentLog() {
    }

    /**
     * Runs {@code action} with the assignment table's logger at WARNING, then puts its level back.
     *
     * @param action what builds the optimizer (and may train with it)
     * @param <T>    what it returns
     * @return what {@code action} returns
     */
    public static <T> T quietly(Supplier<T> action) {
        Level level = LOG.getLevel();
        LOG.setLevel(Level.WARNING);
        try {
            return action.get();
        } finally {
            LOG.setLevel(level);
        }
    }
}
