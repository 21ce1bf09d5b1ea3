package dev.muon;

import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

/**
 * The row blocks of one Muon parameter under a {@link RowSplit}, planned once at build, and the orthogonalization
 * and update of a step done block by block: each block's {@code U} is orthogonalized on its own and applied with
 * the lr adjustment of the block's own shape. Blocks of equal rows go through the orthogonalizer as one stacked
 * view {@code [blocks, rows/blocks, cols]} (a view, no copy: splitting dim 0 of a matrix is a view for any
 * strides); unequal blocks run one call each.
 */
final class RowBlocks {
    final RowSplit rule;
    /** The rows of each block, top to bottom. */
    private final long[] sizes;
    private final long cols;
    /** Whether every block has the same rows, so that they run as one batch. */
    private final boolean equal;

    /**
     * Plans the blocks of a parameter of this layout.
     *
     * @throws IllegalArgumentException if the rule does not fit the rows, or the parameter is a stack of matrices
     */
    RowBlocks(RowSplit rule, MatrixLayout layout, String label) {
        if (layout.batch() != 0) {
            throw new IllegalArgumentException(label + " has shape " + java.util.Arrays.toString(layout.shape())
                    + ", a stack of matrices; " + rule + " splits the rows of one matrix (a 2-D weight or a "
                    + "flattened conv filter)");
        }
        this.rule = rule;
        this.sizes = rule.blockRows(layout.rows(), label);
        this.cols = layout.cols();
        boolean same = true;
        for (long size : sizes) {
            same &= size == sizes[0];
        }
        this.equal = same;
    }

    /** Whether the blocks run as one batch (they all have the same rows). */
    boolean batched() {
        return equal;
    }

    /** The rows of each block, top to bottom. */
    long[] sizes() {
        return sizes.clone();
    }

    /**
     * {@code p = decay·p}, then for each block {@code p_k −= lr·ratio(rows_k, cols)·extraScale·NS(U_k)}.
     *
     * @param matrix         the parameter's matrix view, updated in place
     * @param u              the update {@code U}, the matrix's shape; read only
     * @param orthogonalizer the parameter's orthogonalizer; its result is used before its next call
     * @param config         the group's config (lr, adjustment, weight decay)
     * @param decay          {@code 1 − lr·weightDecay}
     */
    void orthogonalizeAndApply(Tensor matrix, Tensor u, Orthogonalizer orthogonalizer, MuonConfig config,
                               Scalar decay) {
        if (config.weightDecay() != 0) {
            matrix.mul_(decay);
        }
        if (equal) {
            long blocks = sizes.length;
            Tensor o = orthogonalizer.orthogonalize(u.view(blocks, sizes[0], cols));
            matrix.view(blocks, sizes[0], cols).add_(o, new Scalar(-config.scaledLr(sizes[0], cols)));
            return;
        }
        long offset = 0;
        for (long size : sizes) {
            // Each result is a view of the orthogonalizer's workspace: applied before the next block's call.
            Tensor o = orthogonalizer.orthogonalize(u.narrow(0, offset, size));
            matrix.narrow(0, offset, size).add_(o, new Scalar(-config.scaledLr(size, cols)));
            offset += size;
        }
    }

    /**
     * The scaled lr of each block under {@code config}, top to bottom.
     *
     * @param config the group's config
     * @return one lr per block
     */
    double[] scaledLrs(MuonConfig config) {
        double[] lrs = new double[sizes.length];
        for (int k = 0; k < sizes.length; k++) {
            lrs[k] = config.scaledLr(sizes[k], cols);
        }
        return lrs;
    }
}
