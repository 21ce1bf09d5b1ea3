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
                   StudyMachine machine, String corpus, String startedUtc) implements FinishedRun {
}
