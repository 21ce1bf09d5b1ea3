package dev.muon;

import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The momentum stage on libtorch's ops, PyTorch's formulas: {@code B = B.lerp(g, 1 − μ)}, then {@code U = B}, or
 * with Nesterov {@code U = g.lerp(B, μ)}. A same-shape batch's slice, when given, receives {@code U}.
 */
final class MomentumStage implements UpdateStage {
    private final Scratch scratch;

    MomentumStage(Scratch scratch) {
        this.scratch = scratch;
    }

    @Override
    public void run(ParameterUpdate update) {
        ParameterState state = update.state;
        Tensor buffer = state.momentumMatrix();
        buffer.lerp_(update.grad, update.scalars.oneMinusMomentum);
        update.u = finish(update, buffer, state.matrix, scratch);
    }

    /**
     * Leaves {@code U} from an advanced buffer {@code b} where the update wants it: the Nesterov blend written into
     * the batch slice when its dtype is {@code like}'s, else blended in {@code like}'s dtype and rounded once into
     * the slice, as the fused stage does.
     */
    static Tensor finish(ParameterUpdate update, Tensor b, Tensor like, Scratch scratch) {
        Tensor target = update.target;
        if (!update.config.nesterov()) {
            return target == null ? b : target.copy_(b);
        }
        if (target != null && target.scalar_type().value == like.scalar_type().value) {
            return torch.lerp_out(target, update.grad, b, update.scalars.momentum);
        }
        Tensor blended = torch.lerp_out(scratch.like(like, like.scalar_type()), update.grad, b,
                update.scalars.momentum);
        return target == null ? blended : target.copy_(blended);
    }
}
