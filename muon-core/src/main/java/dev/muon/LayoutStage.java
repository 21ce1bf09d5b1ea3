package dev.muon;

import org.bytedeco.pytorch.Tensor;

/**
 * The layout stage: cuts {@code U} and the parameter into the blocks the block stages orthogonalize and apply.
 * Conv filters and stacks arrive already in their matrix views ({@link MatrixLayout}); this stage decides the
 * blocks: the whole matrix or stack as one, or a {@link RowSplit}'s row blocks (equal blocks as one stacked view
 * {@code [blocks, rows/blocks, cols]}, a view and no copy; unequal ones one by one). A stack is cut alike in each
 * of its matrices: its equal blocks become one stack of {@code k·blocks} matrices, its unequal ones stacks of
 * {@code k} matrices.
 */
final class LayoutStage implements UpdateStage {
    /** Null for a parameter taken whole. */
    private final RowBlocks rowBlocks;

    LayoutStage(RowBlocks rowBlocks) {
        this.rowBlocks = rowBlocks;
    }

    @Override
    public void run(ParameterUpdate update) {
        Tensor u = update.u;
        Tensor p = update.state.matrix;
        MatrixLayout layout = update.state.layout;
        if (rowBlocks == null) {
            update.blocks.add(new ParameterUpdate.Block(u, p, layout.rows(), layout.cols(),
                    ParameterUpdate.Block.WHOLE, 0, 0));
            return;
        }
        long[] sizes = rowBlocks.sizes();
        long cols = layout.cols();
        // A stack [k, rows, cols] is cut alike in each of its k matrices, along its dim 1.
        long stack = layout.batch();
        int dim = stack == 0 ? 0 : 1;
        if (rowBlocks.batched()) {
            long n = sizes.length * Math.max(stack, 1);
            update.blocks.add(new ParameterUpdate.Block(u.view(n, sizes[0], cols), p.view(n, sizes[0], cols),
                    sizes[0], cols, 0, n, dim));
            return;
        }
        long offset = 0;
        for (long size : sizes) {
            update.blocks.add(new ParameterUpdate.Block(u.narrow(dim, offset, size), p.narrow(dim, offset, size),
                    size, cols, offset, 0, dim));
            offset += size;
        }
    }
}
