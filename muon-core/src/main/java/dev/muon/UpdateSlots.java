package dev.muon;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * The three typed slots of a Muon parameter's update and the values they pass ({@link UpdatePlan} fills and runs
 * them): the momentum {@code (g, B) → U}, the row scaling {@code (O, state) → O'} and the applier
 * {@code (p, O', lr)}; a block of the parameter; a step's settings. An element of the update with a class of its
 * own (Hyperball's applier) implements its slot here, so that it and the plan that chooses it do not import each
 * other.
 */
final class UpdateSlots {
    private UpdateSlots() {
    }

    /** The momentum slot: advances the parameter's buffer by its gradient and returns the update {@code U}. */
    interface Momentum {
        /**
         * @param grad   the gradient in the parameter's matrix view
         * @param state  the parameter (its buffer is created on first use)
         * @param target where {@code U} must be left (a same-shape batch's slice), or null: anywhere
         * @param step   this step's settings
         * @return {@code U}, in the parameter's matrix view
         */
        Tensor advance(Tensor grad, ParameterState state, Tensor target, Step step);
    }

    /** The row-scaling slot: what happens to a block's {@code O} before it is applied. */
    interface RowScaling {
        /**
         * @param o     the block's orthogonalized update, a view of a workspace the next call for its shape reuses
         * @param block the block
         * @param state the parameter, whose state the row scaling may advance
         * @param step  this step's settings
         * @return {@code O'}, of {@code o}'s shape
         */
        Tensor scale(Tensor o, Block block, ParameterState state, Step step);
    }

    /** The applier slot: how a block's {@code O'} changes the parameter. */
    interface Applier {
        /**
         * @param block the block, whose {@code param} view is updated
         * @param o     the block's {@code O'}
         * @param lr    the block's scaled lr ({@link MuonConfig#scaledLr}); the step is {@code −lr·O'}
         * @param step  this step's settings
         */
        void apply(Block block, Tensor o, double lr, Step step);

        /**
         * Called once after the parameter's last block, for an applier that acts on the whole parameter.
         *
         * @param state the parameter
         * @param step  this step's settings
         */
        default void finish(ParameterState state, Step step) {
        }

        /**
         * Called once when the optimizer is complete, as the last thing its build does, for an applier that sets
         * its parameter up (a check that could refuse belongs in the applier's construction instead, which comes
         * before any parameter changes).
         *
         * @param state the parameter
         */
        default void atBuild(ParameterState state) {
        }
    }

    /**
     * One block of a parameter: a matrix, a stack of matrices, or a stack of equal row blocks, with the parameter's
     * view it updates.
     *
     * @param u        the block's {@code U}: {@code [rows, cols]} or {@code [k, rows, cols]}
     * @param param    the parameter's view of the same shape, updated in place
     * @param rows     the rows of each matrix of the block, for the lr adjustment
     * @param cols     the columns of each matrix of the block
     * @param firstRow the block's first row in the parameter, or {@link #WHOLE}
     * @param stacked  for equal row blocks stacked as one, how many; 0 otherwise
     * @param rowDim   the dim of the parameter's rows: 0 for a matrix, 1 for a stack of matrices
     */
    record Block(Tensor u, Tensor param, long rows, long cols, long firstRow, long stacked, int rowDim) {
        /** {@link #firstRow} of a block that is the whole parameter (a matrix or a stack). */
        static final long WHOLE = -1;

        /** The part of a per-row state {@code v} of the parameter that this block covers, shaped as its rows. */
        Tensor rowsOf(Tensor v) {
            if (stacked > 0) {
                return v.view(stacked, rows);
            }
            return firstRow == WHOLE ? v : v.narrow(rowDim, firstRow, rows);
        }
    }

    /**
     * A group's settings for one step, made once per step rather than once per parameter: its config as a restore
     * or a schedule left it, and the scalars the operations take.
     */
    static final class Step {
        final MuonConfig config;
        final Scalar momentum;
        final Scalar oneMinusMomentum;
        final Scalar decay;
        /** {@link #decay}'s value, for the fused update. */
        final double decayFactor;
        /** {@code −lr·weightDecay}: the factor cautious decay multiplies its masked parameter by. */
        final Scalar negativeLrDecay;

        Step(MuonConfig config) {
            this.config = config;
            momentum = new Scalar(config.momentum());
            oneMinusMomentum = new Scalar(1 - config.momentum());
            decayFactor = 1 - config.lr() * config.weightDecay();
            decay = new Scalar(decayFactor);
            negativeLrDecay = new Scalar(-config.lr() * config.weightDecay());
        }
    }
}
