package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * What {@link MuonAdamW#step()} does when a gradient holds NaN or ±Inf. The default is {@link #SKIP}.
 *
 * <p>SKIP and RAISE check every gradient before any parameter changes (one reduction per gradient and one
 * device synchronisation per step); IGNORE checks nothing.
 */
public enum NonFinitePolicy {
    /**
     * The whole step is skipped: no parameter, moment, buffer or step count changes. The skip is logged at
     * WARNING, and {@link MuonAdamW#lastStep()} names the first offending parameter. This is what mixed-precision
     * loss scalers do, and it keeps one bad batch from destroying a run (the default).
     */
    SKIP,
    /** The step throws an {@link IllegalStateException} naming the parameter; nothing changes. */
    RAISE,
    /** The gradients are used as they are, so NaN spreads into the parameters: PyTorch's behaviour. */
    IGNORE;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
