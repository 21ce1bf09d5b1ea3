package dev.muon.examples.study;

/**
 * One finished run of {@link MuonStudy}: its cell, the validation loss at each evaluation, the training seconds
 * before each (evaluation time excluded), and where and how it ran. A run whose training loss became NaN or
 * infinite stops there ({@code diverged}); its later evaluations are NaN.
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
 * @param corpus       the corpus file's name
 * @param startedUtc   when the run started, ISO-8601 UTC
 */
record StudyResult(StudyCell cell, int[] evalSteps, double[] valLoss, double[] trainSeconds, boolean diverged,
                   double wallSeconds, int threads, int workers, double loadStart, double loadEnd,
                   StudyMachine machine, String corpus, String startedUtc) {
    /** The validation loss after the last step; NaN for a run that diverged. */
    double finalValLoss() {
        return valLoss[valLoss.length - 1];
    }

    /** Mean training milliseconds per step, over the steps before the last finite evaluation. */
    double msPerStep() {
        return msPerStep(evalSteps, valLoss, trainSeconds);
    }

    /**
     * Mean training milliseconds per step of a run's curve (both studies' rows), over the steps before its last
     * finite evaluation; NaN if there is none after step 0.
     */
    static double msPerStep(int[] evalSteps, double[] valLoss, double[] trainSeconds) {
        int last = 0;
        for (int i = 0; i < valLoss.length; i++) {
            if (Double.isFinite(valLoss[i])) {
                last = i;
            }
        }
        return evalSteps[last] == 0 ? Double.NaN : 1000 * trainSeconds[last] / evalSteps[last];
    }

    /**
     * The first step at which the validation loss is at or below {@code target}, linearly interpolated between the
     * two evaluations around the crossing; NaN if it never gets there (the caller counts such a run as censored).
     *
     * @param target the loss to reach
     * @return the step, fractional, or NaN
     */
    double stepsTo(double target) {
        return stepsTo(evalSteps, valLoss, target);
    }

    /**
     * The first step at which a run's curve (both studies' rows) is at or below {@code target}, linearly
     * interpolated between the two evaluations around the crossing; NaN if it never gets there.
     */
    static double stepsTo(int[] evalSteps, double[] valLoss, double target) {
        for (int k = 1; k < valLoss.length; k++) {
            if (valLoss[k] <= target) {
                double before = valLoss[k - 1];
                double fraction = before > valLoss[k] ? (before - target) / (before - valLoss[k]) : 1;
                return evalSteps[k - 1] + Math.min(1, Math.max(0, fraction)) * (evalSteps[k] - evalSteps[k - 1]);
            }
        }
        return Double.NaN;
    }
}
