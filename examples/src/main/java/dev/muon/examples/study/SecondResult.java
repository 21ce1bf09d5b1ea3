package dev.muon.examples.study;

/**
 * One finished run of the second study: its cell, the validation loss at each evaluation, the training seconds
 * before each (evaluations excluded), and where and how it ran. A run whose training loss became NaN or infinite
 * stops there ({@code diverged}); its later evaluations are NaN, and so is its final loss.
 *
 * @param cell         the cell
 * @param evalSteps    the steps of the evaluations, 0 first
 * @param valLoss      the validation loss at each, nats per character
 * @param trainSeconds the training seconds before each (evaluations excluded)
 * @param diverged     whether the training loss stopped being finite
 * @param wallSeconds  the run's seconds from start to end, evaluations and set-up included
 * @param threads      libtorch's intra-op threads during the run
 * @param workers      runs training at once in this JVM during the sweep (their seconds disturb each other)
 * @param loadStart    the one-minute load average at the start, NaN where unknown
 * @param loadEnd      the same at the end
 * @param machine      commit, CPU model and cores
 * @param corpusFile   the dictionary file's name
 * @param startedUtc   when the run started, ISO-8601 UTC
 */
record SecondResult(SecondCell cell, int[] evalSteps, double[] valLoss, double[] trainSeconds, boolean diverged,
                    double wallSeconds, int threads, int workers, double loadStart, double loadEnd,
                    StudyMachine machine, String corpusFile, String startedUtc) implements FinishedRun {
    /**
     * Validates the curve's shape.
     *
     * @throws IllegalArgumentException if the three lists differ in length or the steps do not start at 0 and rise
     */
    SecondResult {
        if (valLoss.length != evalSteps.length || trainSeconds.length != evalSteps.length) {
            throw new IllegalArgumentException("the curve's lists must have one value per evaluation step ("
                    + evalSteps.length + "), got " + valLoss.length + " losses and " + trainSeconds.length
                    + " seconds");
        }
        if (evalSteps.length < 2 || evalSteps[0] != 0) {
            throw new IllegalArgumentException("evaluation steps must be 0 and at least one more, got "
                    + java.util.Arrays.toString(evalSteps));
        }
        for (int k = 1; k < evalSteps.length; k++) {
            if (evalSteps[k] <= evalSteps[k - 1]) {
                throw new IllegalArgumentException("evaluation steps must rise, got "
                        + java.util.Arrays.toString(evalSteps));
            }
        }
    }
}
