package dev.muon;

import dev.muon.UpdateSlots.Applier;
import dev.muon.UpdateSlots.Block;
import dev.muon.UpdateSlots.Momentum;
import dev.muon.UpdateSlots.RowScaling;
import dev.muon.UpdateSlots.Step;
import dev.muon.internal.FusedUpdateKernels;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.ArrayList;
import java.util.List;

/**
 * One Muon parameter's update on libtorch: its {@link UpdateRecipe} mapped to operations when the optimizer is
 * built ({@link #of}), in three typed slots that pass values, as Dion's {@code muon_update_pre_orthogonalize} and
 * {@code muon_update_post_orthogonalize} do:
 * <pre>
 *   before the orthogonalization   momentum  (g, B) → U;  the layout cuts U and p into blocks
 *   the orthogonalization          O = NS(U) per block (the parameter's orthogonalizer; a same-shape batch runs
 *                                  one call for all its members)
 *   after it, per block            row scaling (O, the block's rows of the state) → O';  lr of the block's shape;
 *                                  applier (p, O', lr): decay and step, inside the weight hook if there is one
 *   after the last block           the applier's whole-parameter part, if it has one (a hook's, on unequal
 *                                  row blocks)
 * </pre>
 * The whole update is readable here (the slots' types and the values they pass are {@link UpdateSlots});
 * {@link PlannedUpdates} runs it per parameter or per same-shape batch.
 * What a restore or a schedule changes (the hyperparameters) reaches the slots as this step's {@link Step}; what
 * chose them (the recipe) is fixed at build.
 */
final class UpdatePlan {
    private final Momentum momentum;
    /** The parameter's row split, or null for the whole matrix (or stack) as one block. */
    private final RowBlocks rowBlocks;
    private final RowScaling rowScaling;
    private final Applier applier;

    private UpdatePlan(Momentum momentum, RowBlocks rowBlocks, RowScaling rowScaling, Applier applier) {
        this.momentum = momentum;
        this.rowBlocks = rowBlocks;
        this.rowScaling = rowScaling;
        this.applier = applier;
    }

    /**
     * The plan of a parameter: each element of its group's recipe mapped to libtorch's operations, or to a device's
     * fused kernels where they serve it (a fused kernel computes the plain elements only).
     *
     * @param built         its group's config as built, whose recipe ({@link UpdateRecipe#of}) is mapped here
     * @param state         the parameter: its dtype decides what bfloat16 momentum storage means for it, its row
     *                      split the layout, its device's fused kernels (or none) the plain elements
     * @param scratch       the optimizer's reusable tensors
     * @param normalization the optimizer's NorMuon workspaces
     * @throws IllegalArgumentException if an element refuses the parameter
     */
    static UpdatePlan of(MuonConfig built, ParameterState state, Scratch scratch,
                         NeuronNormalization normalization) {
        UpdateRecipe recipe = UpdateRecipe.of(built);
        Tensor param = state.param;
        RowBlocks rowBlocks = state.rowBlocks;
        FusedUpdateKernels fused = state.fusedKernels;
        BufferSpec momentumBuffer = recipe.momentum().buffer();
        LibtorchMomentum plainMomentum = new LibtorchMomentum(scratch, momentumBuffer);
        // Muown's momentum and applier are one object: the applier needs what the momentum computed.
        MuownUpdate muown = recipe.applier() == UpdateRecipe.Applier.MUOWN ? new MuownUpdate(built.muown(), state)
                : null;
        Momentum momentum = switch (recipe.momentum()) {
            case EMA -> fused != null ? new FusedMomentum(fused, plainMomentum, scratch, momentumBuffer)
                    : plainMomentum;
            // A bfloat16 parameter's buffer is bfloat16 either way: stored in bfloat16 is kept in its dtype.
            case EMA_BFLOAT16_STORED -> param.scalar_type().value == ScalarType.BFloat16.value ? plainMomentum
                    : new BfloatMomentum(scratch, momentumBuffer);
            case MUOWN_DIRECTION -> muown;
        };
        RowScaling rowScaling = switch (recipe.rowScaling()) {
            case NONE -> (o, block, parameter, step) -> o;
            case NORMUON -> (o, block, parameter, step) -> normalization.normalize(o,
                    block.rowsOf(parameter.bufferForUpdate(UpdateRecipe.SECOND_MOMENT)), step.config.norMuon());
        };
        // The fused update computes p·decay + alpha·O on the orthogonalizer's own output of the whole parameter.
        boolean fusedApply = fused != null && recipe.rowScaling() == UpdateRecipe.RowScaling.NONE
                && recipe.weightHook() == UpdateRecipe.WeightHook.NONE && rowBlocks == null;
        Applier decay = switch (recipe.applier()) {
            case DECOUPLED_DECAY -> fusedApply ? new FusedApply(fused) : UpdatePlan::decayAndStep;
            case CAUTIOUS_DECAY -> UpdatePlan::cautiousDecayAndStep;
            case MUOWN -> muown;
        };
        Applier applier = switch (recipe.weightHook()) {
            case NONE -> decay;
            // In place of the decay, which is 0 with it (MuonConfig's rule).
            case HYPERBALL -> new HyperballApplier(built.hyperball(), state);
            case RADIAL_BRAKE, RELATIVE_UPDATE, UPDATE_FLOOR, UPDATE_FLOOR_PER_ROW ->
                    new WeightHookApplier(recipe.weightHook(), built, state, decay);
        };
        return new UpdatePlan(momentum, rowBlocks, rowScaling, applier);
    }

    /**
     * Everything before the orthogonalization: the momentum, then the layout's blocks of {@code U}.
     *
     * @param state  the parameter
     * @param grad   its gradient, in the parameter's shape
     * @param target where {@code U} must be left (a same-shape batch's slice), or null
     * @param step   this step's settings
     * @return the blocks to orthogonalize, in order
     */
    List<Block> beforeOrthogonalize(ParameterState state, Tensor grad, Tensor target, Step step) {
        Tensor u = momentum.advance(state.layout.matrixView(grad), state, target, step);
        return blocks(u, state);
    }

    /**
     * Everything after a block's orthogonalization: the row scaling, the lr of the block's shape, apply.
     *
     * @param state the parameter
     * @param block the block
     * @param o     its orthogonalized update
     * @param step  this step's settings
     * @return the block's scaled lr
     */
    double afterOrthogonalize(ParameterState state, Block block, Tensor o, Step step) {
        Tensor scaled = rowScaling.scale(o, block, state, step);
        double lr = step.config.scaledLr(block.rows(), block.cols());
        applier.apply(block, scaled, lr, step);
        return lr;
    }

    /**
     * After the parameter's last block.
     *
     * @param state the parameter
     * @param step  this step's settings
     */
    void finish(ParameterState state, Step step) {
        applier.finish(state, step);
    }

    /**
     * When the optimizer is complete: the applier's set-up of the parameter, if it has one.
     *
     * @param state the parameter
     */
    void atBuild(ParameterState state) {
        applier.atBuild(state);
    }

    /**
     * Cuts {@code U} and the parameter into the blocks that are orthogonalized and applied: the whole matrix or
     * stack as one, or a {@link RowSplit}'s row blocks (equal blocks as one stacked view
     * {@code [blocks, rows/blocks, cols]}, a view and no copy; unequal ones one by one). Conv filters and stacks
     * arrive in their matrix views ({@link MatrixLayout}). A stack is cut alike in each of its matrices: its equal
     * blocks become one stack of {@code k·blocks} matrices, its unequal ones stacks of {@code k} matrices.
     */
    private List<Block> blocks(Tensor u, ParameterState state) {
        Tensor p = state.matrix;
        MatrixLayout layout = state.layout;
        if (rowBlocks == null) {
            return List.of(new Block(u, p, layout.rows(), layout.cols(), Block.WHOLE, 0, 0));
        }
        long[] sizes = rowBlocks.sizes();
        long cols = layout.cols();
        // A stack [k, rows, cols] is cut alike in each of its k matrices, along its dim 1.
        long stack = layout.batch();
        int dim = stack == 0 ? 0 : 1;
        if (rowBlocks.batched()) {
            long n = sizes.length * Math.max(stack, 1);
            return List.of(new Block(u.view(n, sizes[0], cols), p.view(n, sizes[0], cols), sizes[0], cols, 0, n,
                    dim));
        }
        List<Block> blocks = new ArrayList<>(sizes.length);
        long offset = 0;
        for (long size : sizes) {
            blocks.add(new Block(u.narrow(dim, offset, size), p.narrow(dim, offset, size), size, cols, offset, 0,
                    dim));
            offset += size;
        }
        return blocks;
    }

    // ------------------------------------------------------------------ the momentum slot

    /**
     * The momentum on libtorch's ops, PyTorch's formulas: {@code B = B.lerp(g, 1 − μ)}, then {@code U = B}, or with
     * Nesterov {@code U = g.lerp(B, μ)}.
     */
    private record LibtorchMomentum(Scratch scratch, BufferSpec buffer) implements Momentum {
        @Override
        public Tensor advance(Tensor grad, ParameterState state, Tensor target, Step step) {
            Tensor buffer = state.bufferMatrix(this.buffer);
            buffer.lerp_(grad, step.oneMinusMomentum);
            return finish(grad, buffer, state.matrix, target, step, scratch);
        }
    }

    /**
     * Leaves {@code U} from an advanced buffer {@code b} where it is wanted: the Nesterov blend written into the
     * batch slice when its dtype is {@code like}'s, else blended in {@code like}'s dtype and rounded once into the
     * slice, as the fused momentum does.
     */
    private static Tensor finish(Tensor grad, Tensor b, Tensor like, Tensor target, Step step, Scratch scratch) {
        if (!step.config.nesterov()) {
            return target == null ? b : target.copy_(b);
        }
        if (target != null && target.scalar_type().value == like.scalar_type().value) {
            return torch.lerp_out(target, grad, b, step.momentum);
        }
        Tensor blended = torch.lerp_out(scratch.like(like, like.scalar_type()), grad, b, step.momentum);
        return target == null ? blended : target.copy_(blended);
    }

    /**
     * The momentum with the buffer stored in bfloat16 ({@link MomentumPrecision#BFLOAT16}): read into float32
     * (float64 for a float64 parameter), advanced there with PyTorch's formula, used as the update in that
     * precision, and stored back rounded to bfloat16. A float16 parameter's gradient is widened first (exactly).
     */
    private record BfloatMomentum(Scratch scratch, BufferSpec buffer) implements Momentum {
        @Override
        public Tensor advance(Tensor grad, ParameterState state, Tensor target, Step step) {
            Tensor stored = state.bufferMatrix(buffer);
            ScalarType wide = state.matrix.scalar_type().value == ScalarType.Double.value ? ScalarType.Double
                    : ScalarType.Float;
            // Widened exactly; only a float16 parameter's gradient needs it (a temporary of the step's scope).
            Tensor g = grad.scalar_type().value == wide.value ? grad : grad.to(wide);
            // A scratch of its own shape and dtype: the Nesterov blend below uses the parameter-dtype scratch.
            Tensor b = scratch.like(stored, wide).copy_(stored);
            b.lerp_(g, step.oneMinusMomentum);
            stored.copy_(b);
            return finish(g, b, b, target, step, scratch);
        }
    }

    /**
     * The momentum on a device's fused kernel ({@link FusedUpdateKernels#momentumInto}: momentum, Nesterov blend and
     * the
     * cast to the update dtype in one call), falling back to libtorch's ops for every call the kernel declines.
     */
    private record FusedMomentum(FusedUpdateKernels kernels, LibtorchMomentum fallback, Scratch scratch,
                                 BufferSpec buffer) implements Momentum {
        @Override
        public Tensor advance(Tensor grad, ParameterState state, Tensor target, Step step) {
            Tensor out = target != null ? target
                    : scratch.like(state.matrix, step.config.nsPrecision().scalarType());
            if (kernels.momentumInto(out, state.bufferMatrix(buffer), grad, step.config.momentum(),
                    step.config.nesterov())) {
                return out;
            }
            return fallback.advance(grad, state, target, step);
        }
    }

    // ------------------------------------------------------------------ the applier slot

    /**
     * Decoupled weight decay with the unadjusted lr, then the step: {@code p = (1 − lr·wd)·p}, {@code p −= lr'·O}.
     */
    private static void decayAndStep(Block block, Tensor o, double lr, Step step) {
        if (step.config.weightDecay() != 0) {
            block.param().mul_(step.decay);
        }
        block.param().add_(o, new Scalar(-lr));
    }

    /**
     * Cautious weight decay ({@link MuonConfig#withCautiousWeightDecay}, Chen et al., arXiv 2510.12402): the decay
     * applies only to the coordinates where {@code O} (what the step subtracts) and the parameter agree in sign, so
     * that decay never pushes against the step: {@code p −= lr·wd·p·[O ⊙ p >= 0]}, then {@code p −= lr'·O}.
     */
    private static void cautiousDecayAndStep(Block block, Tensor o, double lr, Step step) {
        Tensor p = block.param();
        if (step.config.weightDecay() != 0) {
            // The mask from the parameter before the step, in its dtype: 1 where O·p >= 0, else 0.
            Tensor agree = o.mul(p).ge(new Scalar(0.0)).to(p.scalar_type());
            p.addcmul_(p, agree, step.negativeLrDecay);
        }
        p.add_(o, new Scalar(-lr));
    }

    /**
     * Decay and step on a device's fused kernel ({@link FusedUpdateKernels#updateParameter}), falling back to
     * {@link #decayAndStep} for every call the kernel declines. Chosen only where the block is the whole parameter
     * and {@code O} is the orthogonalizer's own output (no row scaling, no weight hook, no row split).
     */
    private record FusedApply(FusedUpdateKernels kernels) implements Applier {
        @Override
        public void apply(Block block, Tensor o, double lr, Step step) {
            if (!kernels.updateParameter(block.param(), o, step.decayFactor, -lr)) {
                decayAndStep(block, o, lr, step);
            }
        }
    }
}
