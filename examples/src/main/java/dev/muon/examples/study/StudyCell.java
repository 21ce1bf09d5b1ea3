package dev.muon.examples.study;

import java.util.Locale;

/**
 * One run of {@link MuonStudy}: an optimizer with its lrs, a seed, and the model and data sizes. The seed sets the
 * initial weights ({@code torch.manual_seed}) and the order of the training batches ({@code java.util.Random}),
 * so two arms with the same seed start from the same weights and see the same batches.
 *
 * @param arm         the optimizer
 * @param adamwLr     AdamW's lr (for the Muon arms, their AdamW side's)
 * @param muonLr      the Muon lr in AdamW's units ({@code MATCH_RMS_ADAMW}); NaN for {@link StudyArm#ADAMW}
 * @param weightDecay the decoupled weight decay of both sides (Hyperball's Muon side uses 0)
 * @param seed        the seed
 * @param width       the model width d
 * @param layers      transformer blocks
 * @param heads       attention heads
 * @param context     characters per input
 * @param batch       windows per training batch
 * @param steps       training steps
 * @param evals       validations after step 0, evenly spaced: at {@code k·steps/evals} for k = 1..evals
 */
record StudyCell(StudyArm arm, double adamwLr, double muonLr, double weightDecay, long seed, int width, int layers,
                 int heads, int context, int batch, int steps, int evals) implements SeededCell<StudyCell> {
    /**
     * Validates the cell.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    StudyCell {
        positive("--lr", adamwLr);
        if (arm.muon()) {
            positive("--muon-lr", muonLr);
        } else if (!Double.isNaN(muonLr)) {
            throw new IllegalArgumentException("--muon-lr must not be given for adamw, which has no Muon side, got "
                    + muonLr);
        }
        if (!(weightDecay >= 0) || !Double.isFinite(weightDecay)) {
            throw new IllegalArgumentException("--weight-decay must be a finite number >= 0, got " + weightDecay);
        }
        java.util.Map<String, Integer> counts = new java.util.LinkedHashMap<>();
        counts.put("--width", width);
        counts.put("--layers", layers);
        counts.put("--heads", heads);
        counts.put("--context", context);
        counts.put("--batch", batch);
        counts.put("--steps", steps);
        counts.put("--evals", evals);
        for (java.util.Map.Entry<String, Integer> e : counts.entrySet()) {
            if (e.getValue() < 1) {
                throw new IllegalArgumentException(e.getKey() + " must be >= 1, got " + e.getValue());
            }
        }
        if (width % heads != 0) {
            throw new IllegalArgumentException("--heads must divide --width, got width " + width + ", heads "
                    + heads);
        }
        if (evals > steps) {
            throw new IllegalArgumentException("--evals must be <= --steps (" + steps + "), got " + evals);
        }
    }

    private static void positive(String option, double value) {
        if (!(value > 0) || !Double.isFinite(value)) {
            throw new IllegalArgumentException(option + " must be a finite number > 0, got " + value);
        }
    }

    /** The steps after which the validation loss is measured: 0, then {@code k·steps/evals} for k = 1..evals. */
    int[] evalSteps() {
        int[] out = new int[evals + 1];
        for (int k = 1; k <= evals; k++) {
            out[k] = (int) ((long) k * steps / evals);
        }
        return out;
    }

    /** Tokens (characters) seen in training: steps × batch × context. */
    long tokens() {
        return (long) steps * batch * context;
    }

    @Override
    public StudyCell withSeed(long value) {
        return new StudyCell(arm, adamwLr, muonLr, weightDecay, value, width, layers, heads, context, batch, steps,
                evals);
    }

    /**
     * What identifies the cell in the results: every field, numbers in Java's shortest round-trip form, so that
     * a cell read back from the CSV has the key it was written with.
     *
     * @return the key
     */
    @Override
    public String key() {
        return String.join("|", arm.id(), Double.toString(adamwLr), Double.toString(muonLr),
                Double.toString(weightDecay), Long.toString(seed), Integer.toString(width), Integer.toString(layers),
                Integer.toString(heads), Integer.toString(context), Integer.toString(batch), Integer.toString(steps),
                Integer.toString(evals));
    }

    /** The setting this cell belongs to: its model, data and length, without optimizer and seed. */
    StudySetting setting() {
        return new StudySetting(width, batch, layers, heads, context, steps, evals, weightDecay);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s lr %s%s seed %d, d = %d, batch %d, %d steps", arm.id(), lr(adamwLr),
                arm.muon() ? " muon-lr " + lr(muonLr) : "", seed, width, batch, steps);
    }

    /** An lr as the tables write it: {@code 5e-4}, {@code 1.6e-2}. */
    static String lr(double lr) {
        String s = String.format(Locale.ROOT, "%.3e", lr);
        int e = s.indexOf('e');
        String mantissa = s.substring(0, e).replaceAll("\\.?0+$", "");
        return mantissa + "e" + Integer.parseInt(s.substring(e + 1));
    }
}
