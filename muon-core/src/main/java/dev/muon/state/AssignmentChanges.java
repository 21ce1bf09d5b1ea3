package dev.muon.state;

import dev.muon.internal.TorchNatives;

/**
 * What a restore ({@code load}, {@code restore}) does with the parameters whose place in the optimizer changed
 * since the state was saved: a parameter moved between Muon and AdamW (or to the other AdamW group, or got another
 * row split), a parameter that appeared, or a tied weight that was split (or tied). The default, {@link #REFUSE},
 * refuses the state and lists every difference; {@link #START_FRESH} restores the rest and starts those parameters'
 * optimizer state afresh. See {@code docs/checkpoints.md}, "When the assignment changed".
 */
public enum AssignmentChanges {
    /**
     * A state whose parameters are not exactly the optimizer's (names, optimizers, groups, shapes, dtypes, ties,
     * row splits, order) is refused with a {@link StateMismatchException} listing every difference, whose message
     * says how to continue; nothing changes (the default).
     */
    REFUSE,
    /**
     * Every parameter whose entry is unchanged is restored bit for bit (value and optimizer state), as are the step
     * count, the configs and the schedule record. A parameter of the same name, shape and dtype on another
     * optimizer or group, with another tie or row split, gets the state's value and no optimizer state (its
     * momentum or AdamW moments start at zero, AdamW's step count at 0); a parameter the state does not hold
     * (one that appeared, or the second name of a tied weight that was split) keeps its current value and starts
     * fresh too; the saved state of a name now tied to another is dropped. Each is named in one INFO line of the
     * optimizer's logger. Still refused, listing every difference: a parameter of the state the optimizer does not
     * have, another shape or dtype, another number of Muon groups or build settings, an AdamW part on one side
     * only, and a parameter moved to another group of a {@code Muon}, whose parameters are known by their place
     * only (the state cannot say which one moved).
     */
    START_FRESH;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
