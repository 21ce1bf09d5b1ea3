package dev.muon;

import dev.muon.internal.TorchNatives;

/** What Muon does with a 4-D parameter (a conv filter {@code [out, in, kh, kw]}). */
public enum ConvWeights {
    /** Reject it at construction, with a message that says how to allow it (the default). */
    REJECT,
    /** Treat it as the matrix {@code [out, in·kh·kw]}, as Keller Jordan's CIFAR-10 speedruns do. */
    FLATTEN;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
