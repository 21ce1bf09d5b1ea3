package dev.muon;

import dev.muon.internal.TorchNatives;

/** Which orthogonalization a Muon group uses. */
public enum Orthogonalization {
    /** Newton–Schulz iterations (the default); on CUDA tensors a registered provider's kernels if present. */
    NEWTON_SCHULZ,
    /** The exact polar factor from an SVD in float64: a slow reference for checking Newton–Schulz quality. */
    EXACT_SVD;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
