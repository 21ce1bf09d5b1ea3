package dev.muon;

/**
 * The lr stage: the block's step size {@code −lr·ratio(rows, cols)·extraScale} ({@link AdjustLr}; NorMuon's
 * {@code 0.2·lr·extraScale}), from the block's own shape, computed here once; the parameter's first block's is
 * what the optimizer reports as the lr applied.
 */
final class LrScaleStage implements UpdateStage {
    static final LrScaleStage INSTANCE = new LrScaleStage();

    private LrScaleStage() {
    }

    @Override
    public void run(ParameterUpdate update) {
        ParameterUpdate.Block block = update.block;
        double lr = update.config.scaledLr(block.rows, block.cols);
        block.alpha = -lr;
        if (block == update.blocks.get(0)) {
            update.appliedLr = lr;
        }
    }
}
