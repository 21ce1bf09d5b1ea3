package dev.muon.examples.study;

import dev.muon.schedule.LrSchedule;

/**
 * The model and the measurements a second-study run trains with: {@link #PROTOCOL}, the protocol's (SecondPlan's
 * constants, the cell's steps, the first study's 256 validation windows), or, in tests, a smaller model, fewer
 * windows and evaluations, and a shorter run, so that the runner's every path runs in seconds without a changed
 * protocol constant. A cell's key never changes with the scale; only the protocol's scale makes the study's rows.
 *
 * @param width             the model width
 * @param layers            transformer blocks
 * @param heads             attention heads
 * @param context           characters per input
 * @param batch             windows per step
 * @param validationWindows fixed validation windows
 * @param evals             evaluations after step 0, evenly spaced
 * @param steps             the run's length; 0 for the cell's budget
 */
record SecondScale(int width, int layers, int heads, int context, int batch, int validationWindows, int evals,
                   int steps) {
    /** The protocol's: SecondPlan's model, 256 windows, 25 evaluations, the cell's steps. */
    static final SecondScale PROTOCOL = new SecondScale(SecondPlan.WIDTH, SecondPlan.LAYERS, SecondPlan.HEADS,
            SecondPlan.CONTEXT, SecondPlan.BATCH, StudyRun.VALIDATION_WINDOWS, SecondPlan.EVALS, 0);

    /**
     * Validates the fields.
     *
     * @throws IllegalArgumentException naming the field, the rule and the value
     */
    SecondScale {
        atLeastOne("width", width);
        atLeastOne("layers", layers);
        atLeastOne("heads", heads);
        atLeastOne("context", context);
        atLeastOne("batch", batch);
        atLeastOne("validationWindows", validationWindows);
        atLeastOne("evals", evals);
        if (width % heads != 0) {
            throw new IllegalArgumentException("heads must divide width, got width " + width + ", heads " + heads);
        }
        if (steps != 0 && steps < evals) {
            throw new IllegalArgumentException("steps must be 0 (the cell's) or >= evals (" + evals + "), got "
                    + steps);
        }
    }

    private static void atLeastOne(String field, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(field + " must be >= 1, got " + value);
        }
    }

    /** The steps a cell trains: its budget, or this scale's shorter run. */
    int steps(SecondCell cell) {
        return steps == 0 ? cell.steps() : steps;
    }

    /** The cell's schedule over the steps it trains: the cell's own, or the same rule over the shorter run. */
    LrSchedule schedule(SecondCell cell) {
        if (steps == 0) {
            return cell.schedule();
        }
        return LrSchedule.warmupCosine(Math.round(SecondCell.WARMUP_FRACTION * steps), steps, SecondCell.MIN_FACTOR);
    }

    /** The steps after which the validation loss is measured: 0, then {@code k·steps/evals}; the cell's own. */
    int[] evalSteps(SecondCell cell) {
        if (steps == 0 && evals == SecondPlan.EVALS) {
            return cell.evalSteps();
        }
        int n = steps(cell);
        int[] out = new int[evals + 1];
        for (int k = 1; k <= evals; k++) {
            out[k] = (int) ((long) k * n / evals);
        }
        return out;
    }
}
