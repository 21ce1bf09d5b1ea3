package dev.muon;

/**
 * Remembers a step that threw after it had begun changing parameters, and refuses what would build on it until a
 * restore.
 *
 * <p>Why: everything a step can check (gradients, policies, ranks' agreement) is checked before the first parameter
 * changes, and such a rejection changes nothing. What is left cannot be checked in advance: libtorch running out of
 * memory, a rank dying between the update and the broadcast. Undoing it would need a copy of every parameter and
 * buffer per step, twice the optimizer's memory. Instead the optimizer knows it is part-way through a step, and a
 * following {@code step()} (which would build on it) or {@code save()} (which would store a state no step produced)
 * throws until a restore gives it a whole state again.
 */
final class PartialStep {
    private final String owner;
    /** The step that failed part-way (1-based), and why; null while the state is whole. */
    private long failedStep;
    private Throwable cause;

    PartialStep(String owner) {
        this.owner = owner;
    }

    /**
     * Runs the changing part of a step; if it throws, remembers it and rethrows.
     *
     * @param step    the number the step would have had
     * @param changes the part of the step that changes parameters and state
     */
    void run(long step, Runnable changes) {
        try {
            changes.run();
        } catch (RuntimeException | Error e) {
            if (cause == null) {
                failedStep = step;
                cause = e;
            }
            throw e;
        }
    }

    /**
     * Throws if a step failed part-way since the last restore.
     *
     * @param call the call about to run, for the message
     * @throws IllegalStateException naming the failed step, its cause and the way out
     */
    void requireWhole(String call) {
        if (cause != null) {
            throw new IllegalStateException(owner + "." + call + "() refused: step " + failedStep + " failed after it "
                    + "had begun changing parameters (" + cause + "), so parameters and optimizer state are part-way "
                    + "through that step; restore a saved state first (load or restore, or importTorchStateDict "
                    + "together with the model's weights)", cause);
        }
    }

    /** A restore replaced the parameters' state: whole again. */
    void clear() {
        failedStep = 0;
        cause = null;
    }

    /** Whether a step failed part-way since the last restore. */
    boolean isPartial() {
        return cause != null;
    }
}
