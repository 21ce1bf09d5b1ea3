package dev.muon.examples.study;

/**
 * What a finished run of either study ({@link StudyResult}, {@link SecondResult}) holds besides its cell and its
 * corpus: its curve, and where and how it ran. Both results files write it in the same columns
 * ({@link ResultsFile#runColumns}).
 */
interface FinishedRun {
    /** The steps of the evaluations, 0 first. */
    int[] evalSteps();

    /** The validation loss at each evaluation, nats per character. */
    double[] valLoss();

    /** The training seconds before each evaluation (evaluations excluded). */
    double[] trainSeconds();

    /** Whether the training loss stopped being finite. */
    boolean diverged();

    /** The run's seconds from start to end, evaluations and set-up included. */
    double wallSeconds();

    /** libtorch's intra-op threads during the run. */
    int threads();

    /** Runs training at once in this JVM during the sweep. */
    int workers();

    /** The one-minute load average at the start, NaN where unknown. */
    double loadStart();

    /** The same at the end. */
    double loadEnd();

    /** Commit, CPU model and cores. */
    StudyMachine machine();

    /** When the run started, ISO-8601 UTC. */
    String startedUtc();

    /** The validation loss after the last step; NaN for a run that diverged. */
    default double finalValLoss() {
        double[] valLoss = valLoss();
        return valLoss[valLoss.length - 1];
    }

    /**
     * The first step at which the validation loss is at or below {@code target}, linearly interpolated between the
     * two evaluations around the crossing; the first evaluation's step if it is already there; NaN if it never gets
     * there (both analyses count such a run as censored, at the run's length).
     *
     * @param target the loss to reach
     * @return the step, fractional, or NaN
     */
    default double stepsTo(double target) {
        int[] evalSteps = evalSteps();
        double[] valLoss = valLoss();
        if (valLoss[0] <= target) {
            return evalSteps[0];
        }
        for (int k = 1; k < valLoss.length; k++) {
            if (valLoss[k] <= target) {
                double before = valLoss[k - 1];
                double fraction = before > valLoss[k] ? (before - target) / (before - valLoss[k]) : 1;
                return evalSteps[k - 1] + Math.min(1, Math.max(0, fraction)) * (evalSteps[k] - evalSteps[k - 1]);
            }
        }
        return Double.NaN;
    }

    /**
     * Mean training milliseconds per step, over the steps before the last finite evaluation; NaN if there is none
     * after step 0.
     */
    default double msPerStep() {
        int[] evalSteps = evalSteps();
        double[] valLoss = valLoss();
        int last = 0;
        for (int i = 0; i < valLoss.length; i++) {
            if (Double.isFinite(valLoss[i])) {
                last = i;
            }
        }
        return evalSteps[last] == 0 ? Double.NaN : 1000 * trainSeconds()[last] / evalSteps[last];
    }
}
