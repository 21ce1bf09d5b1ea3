package dev.muon;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * The apply stage with cautious weight decay ({@link MuonConfig#withCautiousWeightDecay}, Chen et al., arXiv
 * 2510.12402): the decoupled decay applies only to the coordinates where the update {@code O} (what the step
 * subtracts) and the parameter agree in sign, so that decay never pushes against the step:
 * {@code p −= lr·wd·p·[O ⊙ p >= 0]}, then {@code p += alpha·O}. Without weight decay it is {@link ApplyStage}.
 */
final class CautiousApplyStage implements UpdateStage {
    static final CautiousApplyStage INSTANCE = new CautiousApplyStage();

    private CautiousApplyStage() {
    }

    @Override
    public void run(ParameterUpdate update) {
        ParameterUpdate.Block block = update.block;
        if (update.config.weightDecay() != 0) {
            // The mask from the parameter before the step, in its dtype: 1 where O·p >= 0, else 0.
            Tensor agree = block.o.mul(block.param).ge(new Scalar(0.0)).to(block.param.scalar_type());
            block.param.addcmul_(block.param, agree, update.scalars.negativeLrDecay);
        }
        block.param.add_(block.o, new Scalar(block.alpha));
    }
}
