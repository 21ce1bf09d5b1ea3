package dev.muon.distributed;

import dev.muon.internal.TorchNatives;

/** The precision in which updated Muon parameters travel from the rank that owns them to the others. */
public enum SyncPrecision {
    /** The parameter's own dtype: every rank ends each step with the owner's exact values. */
    PARAMETER_DTYPE,
    /**
     * bfloat16 updates: the owner sends {@code bf16(p_new − p_old)} and every rank, the owner included, sets
     * {@code p = p_old + that}. Half the traffic of float32; ranks stay bit-identical, and the update (not the
     * weight) is rounded to 8 significant bits. Parameters that are already bfloat16 travel as they are.
     */
    BFLOAT16;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
