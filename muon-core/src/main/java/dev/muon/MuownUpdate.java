package dev.muon;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Arrays;

/**
 * Muown's update of one 2-D parameter ({@link MuownConfig}; Lion et al., arXiv 2605.10797): the momentum slot and
 * the applier slot of its plan, one object because the applier needs what the momentum computed in the same step.
 * In float32 (float64 for a float64 parameter), {@code g}, {@code v_norm}, {@code m_g} and {@code v_g} of one entry
 * per row ({@link UpdateRecipe#MUOWN_G} and the others), the step count {@code t} a 0-dim buffer:
 * <pre>
 *   momentum   t += 1; at t = 1, g = v_norm = ‖W‖_row
 *              u = W/g; v = u·v_norm; grad_g = rowsum(grad ⊙ u); grad_v = (g/v_norm)·(grad − u·grad_g)
 *              B = B.lerp(grad_v, 1 − μ); U = B
 *   apply      per block of O (the orthogonalizer's, normalized if NorMuon is on): v −= lr'·O on its rows
 *   finish     Adam on g with the unadjusted lr, then g −= lr·weightDecay·g; W = g·v/‖v‖_row; v_norm = ‖v‖_row
 * </pre>
 * The seed and the bias corrections are computed on the device from {@code t}, never read back, so a GPU step does
 * not stall on them. {@code v} and {@code grad_g} live from a step's momentum to its finish, in the step's scope.
 */
final class MuownUpdate implements UpdateSlots.Momentum, UpdateSlots.Applier {
    private static final long[] ROW = {1};

    private final MuownConfig config;
    private final ScalarType wide;
    /** This step's direction {@code v = u·v_norm}, updated block by block; null outside a step. */
    private Tensor v;
    /** This step's gradient of the magnitudes, {@code [rows, 1]}; null outside a step. */
    private Tensor gradG;

    /**
     * The update of one parameter.
     *
     * @param config the group's Muown settings
     * @param state  the parameter
     * @throws IllegalArgumentException if the parameter is not 2-D, or has a row of norm 0 (it has no direction)
     */
    MuownUpdate(MuownConfig config, ParameterState state) {
        this.config = config;
        long[] shape = state.param.shape();
        if (shape.length != 2) {
            throw new IllegalArgumentException("muown needs 2-D parameters (it keeps one magnitude per row of a "
                    + "weight matrix); " + state.label + " has shape " + Arrays.toString(shape) + "; send it to "
                    + "AdamW, or turn muown off");
        }
        this.wide = state.param.scalar_type().value == ScalarType.Double.value ? ScalarType.Double : ScalarType.Float;
        if (state.param.numel() > 0) {
            double smallest = rowNorms(state.param.to(ScalarType.Double)).min().item_double();
            if (!(smallest > 0)) {
                throw new IllegalArgumentException("muown needs every row of a Muon parameter to have norm > 0 (a "
                        + "row is its magnitude times its direction W/‖W‖_row); " + state.label + " has a row of "
                        + "norm " + smallest);
            }
        }
    }

    @Override
    public Tensor advance(Tensor grad, ParameterState state, Tensor target, UpdateSlots.Step step) {
        Tensor w = state.matrix.to(wide);
        Tensor g = state.bufferForUpdate(UpdateRecipe.MUOWN_G).unsqueeze(1);
        Tensor vNorm = state.bufferForUpdate(UpdateRecipe.MUOWN_V_NORM).unsqueeze(1);
        Tensor t = state.bufferForUpdate(UpdateRecipe.MUOWN_STEP).add_(new Scalar(1.0));
        // The seed at the parameter's first step, chosen on the device: the count is never read back.
        Tensor first = t.eq(new Scalar(1.0));
        Tensor norms = rowNorms(w);
        g.copy_(torch.where(first, norms, g));
        vNorm.copy_(torch.where(first, norms, vNorm));
        Tensor gr = grad.to(wide);
        Tensor u = w.div(g);
        v = u.mul(vNorm);
        gradG = gr.mul(u).sum(ROW, true, new ScalarTypeOptional());
        Tensor gradV = gr.sub(u.mul(gradG)).mul_(g.div(vNorm));
        Tensor b = state.bufferMatrix(UpdateRecipe.MUOWN_MOMENTUM);
        b.lerp_(gradV, step.oneMinusMomentum);
        return target == null ? b : target.copy_(b);
    }

    @Override
    public void apply(UpdateSlots.Block block, Tensor o, double lr, UpdateSlots.Step step) {
        Tensor rows = block.firstRow() == UpdateSlots.Block.WHOLE ? v
                : block.stacked() > 0 ? v.view(block.stacked(), block.rows(), block.cols())
                : v.narrow(0, block.firstRow(), block.rows());
        rows.add_(o, new Scalar(-lr));
    }

    @Override
    public void finish(ParameterState state, UpdateSlots.Step step) {
        double lr = step.config.lr();
        Tensor g = state.bufferForUpdate(UpdateRecipe.MUOWN_G).unsqueeze(1);
        Tensor vNorm = state.bufferForUpdate(UpdateRecipe.MUOWN_V_NORM).unsqueeze(1);
        Tensor mG = state.bufferForUpdate(UpdateRecipe.MUOWN_M_G).unsqueeze(1);
        Tensor vG = state.bufferForUpdate(UpdateRecipe.MUOWN_V_G).unsqueeze(1);
        Tensor t = state.bufferForUpdate(UpdateRecipe.MUOWN_STEP);
        // Adam on the magnitudes, bias-corrected by the parameter's own step count.
        mG.lerp_(gradG, new Scalar(1 - config.beta1()));
        vG.lerp_(gradG.square(), new Scalar(1 - config.beta2()));
        Tensor correction1 = torch.pow(new Scalar(config.beta1()), t).neg_().add_(new Scalar(1.0));
        Tensor correction2 = torch.pow(new Scalar(config.beta2()), t).neg_().add_(new Scalar(1.0));
        Tensor update = mG.div(correction1).div_(vG.div(correction2).sqrt_().add_(new Scalar(config.adamEps())));
        g.add_(update, new Scalar(-lr));
        // The decoupled decay of the magnitudes, as the reference writes it: g += (−weightDecay·lr)·g.
        g.add_(g, new Scalar(-step.config.weightDecay() * lr));
        Tensor newNorms = rowNorms(v);
        state.matrix.copy_(g.mul(v.div(newNorms)));
        vNorm.copy_(newNorms);
        v = null;
        gradG = null;
    }

    /** The Euclidean norm of each row, {@code [rows, 1]}, in the matrix's dtype. */
    private static Tensor rowNorms(Tensor matrix) {
        return torch.linalg_vector_norm(matrix, new Scalar(2.0), new long[]{-1}, true, new ScalarTypeOptional());
    }
}
