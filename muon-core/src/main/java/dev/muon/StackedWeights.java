package dev.muon;

import dev.muon.internal.TorchNatives;

/** What Muon does with a 3-D parameter {@code [n, rows, cols]}, such as the stacked weights of MoE experts. */
public enum StackedWeights {
    /** Reject it at construction, with a message that says how to allow it (the default). */
    REJECT,
    /** Treat it as {@code n} independent matrices, orthogonalized as one batch. */
    BATCH;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
