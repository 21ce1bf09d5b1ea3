/**
 * The Muon optimizer over libtorch tensors: {@link dev.muon.Muon} and its configuration
 * {@link dev.muon.MuonConfig}; {@link dev.muon.MuonAdamW}, one optimizer for a whole model (Muon for hidden
 * matrices, libtorch's AdamW for the rest, see {@link dev.muon.Assignment}), with checkpoints, schedules
 * ({@link dev.muon.LrSchedule}, {@link dev.muon.LrScheduler}) and step metrics; and
 * {@link dev.muon.TrainingOptimizer}, the interface both implement. Newton–Schulz and its extension point live in
 * {@code dev.muon.orthogonalize}. Both optimizers have a distributed mode ({@code Builder.distributed(..)}) that
 * shards the Muon work over the c10d process group of {@code dev.muon.distributed}.
 */
package dev.muon;
