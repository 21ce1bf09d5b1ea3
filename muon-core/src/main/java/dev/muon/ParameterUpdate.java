package dev.muon;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.List;

/**
 * One Muon parameter's update in progress within a step: what the {@link UpdateStage}s hand each other. Made once
 * per parameter and reused every step; it holds handles only for the step's duration.
 */
final class ParameterUpdate {
    final ParameterState state;
    /** This step's group settings. */
    MuonConfig config;
    StepScalars scalars;
    /** The gradient, in the parameter's matrix view. */
    Tensor grad;
    /** Where the momentum stage must leave {@code U} (a same-shape batch's slice), or null: anywhere. */
    Tensor target;
    /** {@code U}: the update after the momentum stage, in the parameter's matrix view. */
    Tensor u;
    /** The blocks the layout stage made, in order. */
    final List<Block> blocks = new ArrayList<>();
    /** The block the block stages are working on. */
    Block block;
    /** The scaled lr of this step's first block, NaN before the parameter's first update. */
    double appliedLr = Double.NaN;

    ParameterUpdate(ParameterState state) {
        this.state = state;
    }

    /** Drops this step's handles, so that nothing outlives the step's scope. */
    void clear() {
        grad = null;
        target = null;
        u = null;
        blocks.clear();
        block = null;
    }

    /**
     * One block of a parameter: a matrix, a stack of matrices, or a stack of equal row blocks, with the views of
     * the parameter and of NorMuon's second moment it covers, and what the block stages produce.
     */
    static final class Block {
        /** The block's {@code U}: {@code [rows, cols]} or {@code [k, rows, cols]}. */
        final Tensor u;
        /** The parameter's view of the same shape, updated in place. */
        final Tensor param;
        /** The rows and columns of each matrix of the block, for the lr adjustment. */
        final long rows;
        final long cols;
        /** The block's first row in the parameter, or {@link #WHOLE} when it is the whole parameter. */
        final long firstRow;
        /** For equal row blocks stacked as one: how many; 0 otherwise. */
        final long stacked;
        /** The dim of the parameter's rows: 0 for a matrix, 1 for a stack of matrices. */
        final int rowDim;
        /** The orthogonalized (and normalized) update, set by the block stages. */
        Tensor o;
        /** {@code −lr·ratio·extraScale} (or NorMuon's), set by the lr stage. */
        double alpha;

        /** {@link #firstRow} of a block that is the whole parameter (a matrix or a stack). */
        static final long WHOLE = -1;

        Block(Tensor u, Tensor param, long rows, long cols, long firstRow, long stacked, int rowDim) {
            this.u = u;
            this.param = param;
            this.rows = rows;
            this.cols = cols;
            this.firstRow = firstRow;
            this.stacked = stacked;
            this.rowDim = rowDim;
        }

        /** The part of the parameter's per-row second moment {@code v} this block covers, shaped as its rows. */
        Tensor secondMoment(Tensor v) {
            if (stacked > 0) {
                return v.view(stacked, rows);
            }
            return firstRow == WHOLE ? v : v.narrow(rowDim, firstRow, rows);
        }
    }

    /** A group's per-step scalars, made once per step rather than once per parameter. */
    static final class StepScalars {
        final Scalar momentum;
        final Scalar oneMinusMomentum;
        final Scalar decay;
        /** {@link #decay}'s value, for the fused update stage. */
        final double decayFactor;
        /** {@code −lr·weightDecay}: the factor cautious decay multiplies its masked parameter by. */
        final Scalar negativeLrDecay;

        StepScalars(MuonConfig config) {
            momentum = new Scalar(config.momentum());
            oneMinusMomentum = new Scalar(1 - config.momentum());
            decayFactor = 1 - config.lr() * config.weightDecay();
            decay = new Scalar(decayFactor);
            negativeLrDecay = new Scalar(-config.lr() * config.weightDecay());
        }
    }
}
