package dev.muon.examples.study;

import java.util.Locale;

/**
 * What the runs of one comparison share: the model, the batch size, the run length and the weight decay. The
 * study has a few settings (two widths, two batch sizes); optimizers and lrs are compared within one.
 *
 * @param width       the model width d
 * @param batch       windows per training batch
 * @param layers      transformer blocks
 * @param heads       attention heads
 * @param context     characters per input
 * @param steps       training steps
 * @param evals       validations after step 0
 * @param weightDecay the weight decay
 */
record StudySetting(int width, int batch, int layers, int heads, int context, int steps, int evals,
                    double weightDecay) {
    /** Such as {@code d128-b32}, for file names. */
    String id() {
        return "d" + width + "-b" + batch;
    }

    /** Such as {@code d = 128, batch 32, 1000 steps}. */
    String title() {
        return String.format(Locale.ROOT, "d = %d, %d layers, batch %d, context %d, %d steps", width, layers, batch,
                context, steps);
    }

    /**
     * A cell of this setting.
     *
     * @param arm     the optimizer
     * @param adamwLr AdamW's lr
     * @param muonLr  the Muon lr, NaN for AdamW
     * @param seed    the seed
     * @return the cell
     */
    StudyCell cell(StudyArm arm, double adamwLr, double muonLr, long seed) {
        return new StudyCell(arm, adamwLr, muonLr, weightDecay, seed, width, layers, heads, context, batch, steps,
                evals);
    }
}
