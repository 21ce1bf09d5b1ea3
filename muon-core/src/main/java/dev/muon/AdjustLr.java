package dev.muon;

import dev.muon.internal.TorchNatives;

/**
 * How the learning rate of a Muon update is scaled for a parameter of shape {@code A × B} (rows × cols, before
 * any internal transpose; a flattened conv filter counts as {@code out × in·kh·kw}). Weight decay always uses the
 * unscaled lr.
 */
public enum AdjustLr {
    /** {@code sqrt(max(1, A/B))}: Keller Jordan's original, PyTorch's default. */
    ORIGINAL {
        @Override
        public double ratio(long rows, long cols) {
            return Math.sqrt(Math.max(1.0, (double) rows / cols));
        }
    },
    /**
     * {@code 0.2·sqrt(max(A, B))}: Moonlight's scaling, which gives the update the RMS of a typical AdamW update,
     * so that AdamW's lr and weight decay carry over.
     */
    MATCH_RMS_ADAMW {
        @Override
        public double ratio(long rows, long cols) {
            return 0.2 * Math.sqrt((double) Math.max(rows, cols));
        }
    },
    /** {@code sqrt(A/B)}, unclamped: the spectral-norm scaling (fan-out over fan-in). */
    SPECTRAL {
        @Override
        public double ratio(long rows, long cols) {
            return Math.sqrt((double) rows / cols);
        }
    },
    /** {@code 1}: the lr is used as given. */
    NONE {
        @Override
        public double ratio(long rows, long cols) {
            return 1.0;
        }
    };

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * The factor by which the lr is multiplied for a matrix of this shape.
     *
     * @param rows the parameter's rows
     * @param cols the parameter's columns
     * @return the lr ratio
     */
    public abstract double ratio(long rows, long cols);
}
