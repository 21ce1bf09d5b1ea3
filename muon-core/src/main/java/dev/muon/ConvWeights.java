package dev.muon;

/** What Muon does with a 4-D parameter (a conv filter {@code [out, in, kh, kw]}). */
public enum ConvWeights {
    /** Reject it at construction, with a message that says how to allow it (the default). */
    REJECT,
    /** Treat it as the matrix {@code [out, in·kh·kw]}, as Keller Jordan's CIFAR-10 speedruns do. */
    FLATTEN
}
