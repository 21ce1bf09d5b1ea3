/**
 * Data-parallel training over libtorch's c10d: {@link dev.muon.distributed.DistributedGroup} joins a process
 * group (Gloo on CPU, NCCL on CUDA) from torchrun's environment variables or explicit settings, and
 * {@link dev.muon.distributed.ShardPlan} assigns each Muon parameter to one rank, longest processing time first on
 * its Newton–Schulz FLOPs. {@code Muon.Builder.distributed(..)} and {@code MuonAdamW.Builder.distributed(..)} use
 * both to shard the Newton–Schulz work and the momentum across ranks. See {@code docs/distributed.md}.
 *
 * <p>This package depends on libtorch only, never on the optimizers built on it.
 */
package dev.muon.distributed;
