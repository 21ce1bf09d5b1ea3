package dev.muon;

import dev.muon.internal.UpdateStages;

import java.util.ArrayList;
import java.util.List;

/**
 * The stages of one Muon parameter's update, chosen once when the optimizer is built (see {@link UpdateStage}):
 * the parameter stages (momentum, layout) and the block stages (orthogonalize first, then the rest). This is the
 * one place where a variant enters: a new variant is a stage class and a line here.
 *
 * @param parameterStages run once per parameter per step
 * @param blockStages     run once per block per step; the first is always {@link OrthogonalizeStage}, which a
 *                        same-shape batch runs once for all its members instead
 */
record UpdatePlan(List<UpdateStage> parameterStages, List<UpdateStage> blockStages) {
    UpdatePlan {
        parameterStages = List.copyOf(parameterStages);
        blockStages = List.copyOf(blockStages);
    }

    /**
     * The plan for a parameter.
     *
     * @param config        its group's configuration
     * @param rowBlocks     its row split, or null
     * @param fused         the device's fused stages serving it, or null
     * @param scratch       the optimizer's reusable tensors
     * @param normalization the optimizer's NorMuon workspaces
     */
    static UpdatePlan of(MuonConfig config, RowBlocks rowBlocks, UpdateStages fused, Scratch scratch,
                         NeuronNormalization normalization) {
        List<UpdateStage> parameter = new ArrayList<>();
        MomentumStage momentum = new MomentumStage(scratch);
        if (config.momentumPrecision() == MomentumPrecision.BFLOAT16) {
            parameter.add(new BfloatMomentumStage(scratch));
        } else if (fused != null) {
            parameter.add(new FusedMomentumStage(fused, momentum, scratch));
        } else {
            parameter.add(momentum);
        }
        parameter.add(new LayoutStage(rowBlocks));

        List<UpdateStage> block = new ArrayList<>();
        block.add(OrthogonalizeStage.INSTANCE);
        if (config.norMuon() != null) {
            block.add(new NorMuonStage(normalization));
        }
        block.add(LrScaleStage.INSTANCE);
        if (config.cautiousWeightDecay()) {
            block.add(CautiousApplyStage.INSTANCE);
        } else if (fused != null && config.norMuon() == null && rowBlocks == null) {
            block.add(new FusedApplyStage(fused));
        } else {
            block.add(ApplyStage.INSTANCE);
        }
        return new UpdatePlan(parameter, block);
    }

    /** The block stages after the orthogonalization, for a same-shape batch's members. */
    List<UpdateStage> afterOrthogonalize() {
        return blockStages.subList(1, blockStages.size());
    }
}
