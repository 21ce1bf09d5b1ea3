package dev.muon.distributed;

import dev.muon.internal.TorchNatives;

/** The c10d backend that carries a group's collectives. */
public enum CollectiveBackend {
    /** Gloo: CPU tensors, TCP between processes. Part of every libtorch build. */
    GLOO,
    /** NCCL: CUDA tensors. Needs the {@code -gpu} libtorch natives and a CUDA device. */
    NCCL;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }
}
