/**
 * Learning-rate schedules and the optimizer contract they drive: {@link dev.muon.schedule.LrSchedule}, a pure
 * function from the step to a factor on each group's base lr; {@link dev.muon.schedule.LrScheduler}, which applies one
 * to a {@link dev.muon.schedule.TrainingOptimizer}; {@link dev.muon.schedule.ScheduleRecord}, what an optimizer keeps
 * of its schedule so that a resumed run scales the same base lrs; and {@link dev.muon.schedule.LibtorchOptimizer},
 * which lets a schedule and a training loop drive libtorch's own optimizers. {@code dev.muon.Muon} and
 * {@code dev.muon.MuonAdamW} implement {@code TrainingOptimizer}.
 *
 * <p>This package depends on libtorch (and on muon-core's natives loading) only, never on the optimizers that
 * implement its contract: schedules are a concern of their own, as in PyTorch's {@code torch.optim.lr_scheduler}
 * and optax's schedules.
 */
package dev.muon.schedule;
