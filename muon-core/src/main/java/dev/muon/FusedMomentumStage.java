package dev.muon;

import dev.muon.internal.UpdateStages;
import org.bytedeco.pytorch.Tensor;

/**
 * The momentum stage on a device's fused kernel ({@link UpdateStages#momentumInto}: momentum, Nesterov blend and
 * the cast to the update dtype in one call), falling back to {@link MomentumStage} for every call the kernel
 * declines.
 */
final class FusedMomentumStage implements UpdateStage {
    private final UpdateStages stages;
    private final MomentumStage fallback;
    private final Scratch scratch;

    FusedMomentumStage(UpdateStages stages, MomentumStage fallback, Scratch scratch) {
        this.stages = stages;
        this.fallback = fallback;
        this.scratch = scratch;
    }

    @Override
    public void run(ParameterUpdate update) {
        ParameterState state = update.state;
        Tensor out = update.target != null ? update.target
                : scratch.like(state.matrix, update.config.nsPrecision().scalarType());
        if (stages.momentumInto(out, state.momentumMatrix(), update.grad, update.config.momentum(),
                update.config.nesterov())) {
            update.u = out;
        } else {
            fallback.run(update);
        }
    }
}
