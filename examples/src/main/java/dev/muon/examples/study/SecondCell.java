package dev.muon.examples.study;

import dev.muon.schedule.LrSchedule;

import java.util.Locale;

/**
 * One run of the second study: an arm with its settings, a corpus, a budget and a seed. The model is the first
 * study's {@code 128x32} setting ({@link SecondPlan#WIDTH} and the constants beside it); every run follows
 * {@link #schedule()}, warm-up and cosine decay over its own budget.
 *
 * @param arm         the optimizer
 * @param corpus      {@code gcide} or {@code foldoc}
 * @param steps       the budget in steps
 * @param adamwLr     AdamW's lr (AdamW-2lr's non-hidden group, MuonAdamW's AdamW side)
 * @param beta2       AdamW's β2 (every AdamW group's, MuonAdamW's AdamW side's)
 * @param weightDecay the decoupled weight decay of every group (Hyperball's Muon side uses 0)
 * @param lr2         AdamW-2lr's hidden lr or a Muon arm's Muon lr; NaN for {@link SecondArm#ADAMW}
 * @param radius      Hyperball's radius (0: each matrix's own norm); NaN for every other arm
 * @param seed        the seed: initial weights and batch order
 */
record SecondCell(SecondArm arm, String corpus, int steps, double adamwLr, double beta2, double weightDecay,
                  double lr2, double radius, long seed) implements SeededCell<SecondCell> {
    /** The warm-up's share of the budget. */
    static final double WARMUP_FRACTION = 0.05;
    /** The cosine's final factor on the base lr. */
    static final double MIN_FACTOR = 0.1;

    /**
     * Validates the cell.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    SecondCell {
        positive("adamw lr", adamwLr);
        if (!(beta2 > 0 && beta2 < 1)) {
            throw new IllegalArgumentException("beta2 must be in (0, 1), got " + beta2);
        }
        if (!(weightDecay >= 0) || !Double.isFinite(weightDecay)) {
            throw new IllegalArgumentException("weight decay must be a finite number >= 0, got " + weightDecay);
        }
        if (arm == SecondArm.ADAMW) {
            if (!Double.isNaN(lr2)) {
                throw new IllegalArgumentException("adamw has one lr; lr2 must be NaN, got " + lr2);
            }
        } else {
            positive(arm.id() + " lr2", lr2);
        }
        if (arm == SecondArm.HYPERBALL ? !(radius >= 0 && Double.isFinite(radius)) : !Double.isNaN(radius)) {
            throw new IllegalArgumentException("radius must be a finite number >= 0 for hyperball and NaN for the "
                    + "other arms; " + arm.id() + " got " + radius);
        }
        if (!corpus.equals("gcide") && !corpus.equals("foldoc")) {
            throw new IllegalArgumentException("corpus must be gcide or foldoc, got '" + corpus + "'");
        }
        if (steps < SecondPlan.EVALS) {
            throw new IllegalArgumentException("steps must be >= " + SecondPlan.EVALS + ", got " + steps);
        }
    }

    private static void positive(String field, double value) {
        if (!(value > 0) || !Double.isFinite(value)) {
            throw new IllegalArgumentException(field + " must be a finite number > 0, got " + value);
        }
    }

    /** The warm-up's steps: {@value #WARMUP_FRACTION} of the budget, rounded. */
    long warmupSteps() {
        return Math.round(WARMUP_FRACTION * steps);
    }

    /** The run's schedule: linear warm-up, then cosine to {@value #MIN_FACTOR} of the base lr at the last step. */
    LrSchedule schedule() {
        return LrSchedule.warmupCosine(warmupSteps(), steps, MIN_FACTOR);
    }

    /** The steps after which the validation loss is measured: 0, then {@code k·steps/evals}. */
    int[] evalSteps() {
        int[] out = new int[SecondPlan.EVALS + 1];
        for (int k = 1; k <= SecondPlan.EVALS; k++) {
            out[k] = (int) ((long) k * steps / SecondPlan.EVALS);
        }
        return out;
    }

    @Override
    public SecondCell withSeed(long value) {
        return new SecondCell(arm, corpus, steps, adamwLr, beta2, weightDecay, lr2, radius, value);
    }

    /** What identifies the cell in the results; numbers in Java's shortest round-trip form. */
    @Override
    public String key() {
        return String.join("|", arm.id(), corpus, Integer.toString(steps), Double.toString(adamwLr),
                Double.toString(beta2), Double.toString(weightDecay), Double.toString(lr2), Double.toString(radius),
                Long.toString(seed));
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s %s %d steps, lr %s beta2 %s wd %s%s%s seed %d", arm.id(), corpus, steps,
                StudyCell.lr(adamwLr), beta2, weightDecay, Double.isNaN(lr2) ? "" : " lr2 " + StudyCell.lr(lr2),
                Double.isNaN(radius) ? "" : " radius " + radius, seed);
    }
}
