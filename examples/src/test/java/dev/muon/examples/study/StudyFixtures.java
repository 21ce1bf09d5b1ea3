package dev.muon.examples.study;

import java.util.Arrays;

/** Finished study runs made up for tests of the plan and the analysis: curves chosen, nothing trained. */
final class StudyFixtures {
    /** A small setting: width 16, batch 4, 100 steps, 4 evaluations (steps 0, 25, 50, 75, 100). */
    static final StudySetting SETTING = new StudySetting(16, 4, 1, 4, 16, 100, 4, 0.1);

    private StudyFixtures() {
    }

    /**
     * A finished run of a cell with the given validation losses at its evaluations (step 0 first).
     *
     * @param cell    the cell
     * @param valLoss one loss per evaluation
     * @return the run
     */
    static StudyResult result(StudyCell cell, double... valLoss) {
        int[] steps = cell.evalSteps();
        if (valLoss.length != steps.length) {
            throw new IllegalArgumentException(valLoss.length + " losses for " + steps.length + " evaluations");
        }
        double[] seconds = Arrays.stream(steps).mapToDouble(s -> s * 0.01).toArray();
        return new StudyResult(cell, steps, valLoss, seconds, Double.isNaN(valLoss[valLoss.length - 1]), 1.0, 1, 1,
                0.5, 0.5, new StudyMachine("abc", "test CPU", 2), "tiny.dict.dz", "2026-01-01T00:00:00Z");
    }

    /** A run whose loss falls from 4 to {@code last} in a straight line over its evaluations. */
    static StudyResult straight(StudyCell cell, double last) {
        int n = cell.evals() + 1;
        double[] loss = new double[n];
        for (int k = 0; k < n; k++) {
            loss[k] = 4 + (last - 4) * k / (n - 1);
        }
        return result(cell, loss);
    }
}
