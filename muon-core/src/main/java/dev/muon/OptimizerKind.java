package dev.muon;

import dev.muon.internal.TorchNatives;

/** Which optimizer of a {@link MuonAdamW} updates a parameter. */
public enum OptimizerKind {
    /** Muon: hidden weight matrices (2-D, and 4-D conv filters flattened). */
    MUON,
    /** AdamW: everything else (fewer than 2 dims, embeddings, the output head, tied weights). */
    ADAMW;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
