package dev.muon;

import dev.muon.internal.UpdateStages;

/**
 * The apply stage on a device's fused kernel ({@link UpdateStages#updateParameter}: decay and step in one call),
 * falling back to {@link ApplyStage} for every call the kernel declines. Chosen only where the block is the whole
 * parameter and {@code O} is the orthogonalizer's own output (no NorMuon, no row split).
 */
final class FusedApplyStage implements UpdateStage {
    private final UpdateStages stages;

    FusedApplyStage(UpdateStages stages) {
        this.stages = stages;
    }

    @Override
    public void run(ParameterUpdate update) {
        ParameterUpdate.Block block = update.block;
        if (!stages.updateParameter(block.param, block.o, update.scalars.decayFactor, block.alpha)) {
            ApplyStage.INSTANCE.run(update);
        }
    }
}
