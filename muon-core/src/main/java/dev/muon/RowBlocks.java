package dev.muon;

/**
 * The row blocks of one Muon parameter under a {@link RowSplit}, planned once at build: the rows of each block, and
 * whether they are equal (then they run as one stacked view {@code [blocks, rows/blocks, cols]}, a view and no
 * copy: splitting dim 0 of a matrix is a view for any strides). {@link UpdatePlan} cuts each step's update by
 * them; each block is then orthogonalized and applied on its own, with the lr adjustment of its own shape.
 */
final class RowBlocks {
    final RowSplit rule;
    /** The rows of each block, top to bottom. */
    private final long[] sizes;
    private final long cols;
    /** Whether every block has the same rows, so that they run as one batch. */
    private final boolean equal;

    /**
     * Plans the blocks of a parameter of this layout: of its matrix, or of each matrix of a stack alike.
     *
     * @throws IllegalArgumentException if the rule does not fit the rows of each matrix
     */
    RowBlocks(RowSplit rule, MatrixLayout layout, String label) {
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
