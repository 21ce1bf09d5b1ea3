/**
 * The Muon optimizer over libtorch tensors: {@link dev.muon.Muon} and its configuration
 * {@link dev.muon.MuonConfig}; {@link dev.muon.MuonAdamW}, one optimizer for a whole model (Muon for hidden
 * matrices, libtorch's AdamW update for the rest, see {@link dev.muon.Assignment}), with checkpoints and step metrics.
 * Both implement {@link dev.muon.schedule.TrainingOptimizer}, which the learning-rate schedules of
 * {@code dev.muon.schedule} drive. Newton–Schulz and its extension point live in {@code dev.muon.orthogonalize}.
 * Both optimizers have a distributed mode ({@code Builder.distributed(..)}) that shards the Muon work over the c10d
 * process group of {@code dev.muon.distributed}, and can keep the Muon state in pinned host memory or in files
 * between updates ({@link dev.muon.StateStorage}). {@link dev.muon.MuonUpdate} is the same update as one stateless
 * call over momentum buffers the caller owns, PyTorch's {@code torch.optim.functional.muon}.
 */
package dev.muon;
