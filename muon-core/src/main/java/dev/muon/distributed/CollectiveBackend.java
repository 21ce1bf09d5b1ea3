package dev.muon.distributed;

/** The c10d backend that carries a group's collectives. */
public enum CollectiveBackend {
    /** Gloo: CPU tensors, TCP between processes. Part of every libtorch build. */
    GLOO,
    /** NCCL: CUDA tensors. Needs the {@code -gpu} libtorch natives and a CUDA device. */
    NCCL
}
