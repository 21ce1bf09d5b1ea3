package dev.muon;

import dev.muon.internal.TorchNatives;


/**
 * The dtype Muon stores a parameter's momentum buffer in. The momentum update and the Newton–Schulz input are
 * computed in float32 either way (float64 for a float64 parameter); only the stored buffer differs.
 */
public enum MomentumPrecision {
    /** The parameter's own dtype, as PyTorch's {@code torch.optim.Muon} keeps it (the default). */
    PARAMETER,
    /**
     * bfloat16: half of a float32 parameter's optimizer state. Each step reads the buffer into float32, advances it
     * there, uses that float32 value as the update, and stores it back rounded to bfloat16 (8 significant bits);
     * the rounding error stays in the buffer, as it does in low-precision optimizer states (e.g. Dion's and
     * modded-nanogpt's bfloat16 momentum).
     */
    BFLOAT16;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
