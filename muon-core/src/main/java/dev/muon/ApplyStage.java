package dev.muon;

import org.bytedeco.pytorch.Scalar;

/**
 * The apply stage: decoupled weight decay with the unadjusted lr, then the step, {@code p = (1 − lr·wd)·p} and
 * {@code p += alpha·O}, on the block's view of the parameter.
 */
final class ApplyStage implements UpdateStage {
    static final ApplyStage INSTANCE = new ApplyStage();

    private ApplyStage() {
    }

    @Override
    public void run(ParameterUpdate update) {
        ParameterUpdate.Block block = update.block;
        if (update.config.weightDecay() != 0) {
            block.param.mul_(update.scalars.decay);
        }
        block.param.add_(block.o, new Scalar(block.alpha));
    }
}
