package dev.muon;

/** Which optimizer of a {@link MuonAdamW} updates a parameter. */
public enum OptimizerKind {
    /** Muon: hidden weight matrices (2-D, and 4-D conv filters flattened). */
    MUON,
    /** AdamW: everything else (fewer than 2 dims, embeddings, the output head, tied weights). */
    ADAMW
}
