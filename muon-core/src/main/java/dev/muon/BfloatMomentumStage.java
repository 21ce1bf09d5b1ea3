package dev.muon;

import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The momentum stage with the buffer stored in bfloat16 ({@link MomentumPrecision#BFLOAT16}): the buffer is read
 * into float32 (float64 for a float64 parameter), advanced there with PyTorch's formula, used as the update in that
 * precision, and stored back rounded to bfloat16. The state is half a float32 buffer's size; the update is what
 * the float32 formula gives from the stored (rounded) buffer.
 */
final class BfloatMomentumStage implements UpdateStage {
    private final Scratch scratch;

    BfloatMomentumStage(Scratch scratch) {
        this.scratch = scratch;
    }

    @Override
    public void run(ParameterUpdate update) {
        ParameterState state = update.state;
        Tensor stored = state.momentumMatrix();
        ScalarType wide = state.matrix.scalar_type().value == ScalarType.Double.value ? ScalarType.Double
                : ScalarType.Float;
        // A scratch of its own shape and dtype: the Nesterov blend below uses the parameter-dtype scratch.
        Tensor b = scratch.like(stored, wide).copy_(stored);
        b.lerp_(update.grad, update.scalars.oneMinusMomentum);
        stored.copy_(b);
        update.u = MomentumStage.finish(update, b, b, scratch);
    }
}
