package dev.muon.examples.study;

import dev.muon.examples.CharCorpus;
import dev.muon.examples.CharTransformer;
import dev.muon.examples.MachineLoad;
import dev.muon.examples.TinyGpt;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.OptionalDouble;
import java.util.Random;
import java.util.function.Consumer;

/**
 * Trains one {@link StudyCell}: {@link CharTransformer} from the cell's seed, the cell's optimizer, batches drawn
 * with {@code new Random(seed)} from the training text, and the validation loss on fixed windows at the cell's
 * evaluation steps. Training seconds exclude the evaluations. Safe to call from several threads at once, one
 * cell per thread: the seeding of the weights, which goes through libtorch's one global generator, is done under
 * a lock.
 */
final class StudyRun {
    /** Fixed validation windows, spread evenly over the validation text, the same for every run. */
    static final int VALIDATION_WINDOWS = 256;
    /** Windows per validation forward pass. */
    private static final int VALIDATION_BATCH = 64;
    private static final Object SEEDING = new Object();

    private StudyRun() {
    }

    /**
     * The validation windows of a corpus for a context length.
     *
     * @param corpus  the corpus
     * @param context characters per input
     * @return [{@value #VALIDATION_WINDOWS}, context + 1] token ids
     */
    static Tensor validationWindows(CharCorpus corpus, int context) {
        return corpus.evenValidationWindows(VALIDATION_WINDOWS, context);
    }

    /**
     * Builds a cell's model from its seed and its optimizer.
     *
     * @param corpus the corpus (its vocabulary)
     * @param cell   the cell
     * @return the model and its optimizer
     */
    static Trainee start(CharCorpus corpus, StudyCell cell) {
        CharTransformer model;
        // torch.manual_seed and the modules' initialisation share libtorch's global CPU generator: two threads
        // building at once would each get some of the other's numbers.
        synchronized (SEEDING) {
            torch.manual_seed(cell.seed());
            model = new CharTransformer(corpus.vocabularySize(), cell.context(), cell.width(), cell.layers(),
                    cell.heads());
        }
        return new Trainee(model, cell.arm().build(model, cell), new Random(cell.seed()));
    }

    /** A model, its optimizer and its batch generator, ready to step. */
    record Trainee(CharTransformer model, TinyGpt.Stepper optimizer, Random batches) {
        /**
         * One training step on the next batch.
         *
         * @param corpus the corpus
         * @param cell   the cell (batch size and context)
         * @return the training loss
         */
        double step(CharCorpus corpus, StudyCell cell) {
            try (PointerScope scope = new PointerScope()) {
                return TinyGpt.step(model, optimizer, corpus.batch(batches, false, cell.batch(), cell.context()),
                        cell.context());
            }
        }
    }

    /**
     * Trains the cell.
     *
     * @param corpus     the corpus
     * @param validation the validation windows ({@link #validationWindows})
     * @param cell       the cell
     * @param workers    runs training at once in this JVM, for the row
     * @param corpusName the corpus file's name, for the row
     * @param progress   told each evaluation: step, validation loss, training seconds
     * @return the finished run
     */
    static StudyResult train(CharCorpus corpus, Tensor validation, StudyCell cell, int workers, String corpusName,
                             Consumer<double[]> progress) {
        String started = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        OptionalDouble loadStart = MachineLoad.now();
        long wallStart = System.nanoTime();
        int[] evalSteps = cell.evalSteps();
        double[] valLoss = new double[evalSteps.length];
        double[] seconds = new double[evalSteps.length];
        Arrays.fill(valLoss, Double.NaN);
        Arrays.fill(seconds, Double.NaN);
        boolean diverged = false;
        try (PointerScope scope = new PointerScope()) {
            Trainee trainee = start(corpus, cell);
            double trained = 0;
            valLoss[0] = validationLoss(trainee.model(), validation, cell.context());
            seconds[0] = 0;
            progress.accept(new double[] {0, valLoss[0], 0});
            int next = 1;
            for (int step = 1; step <= cell.steps(); step++) {
                long t0 = System.nanoTime();
                double loss = trainee.step(corpus, cell);
                trained += (System.nanoTime() - t0) / 1e9;
                if (!Double.isFinite(loss)) {
                    // An lr too large for the optimizer: the rest of the run would only cost time.
                    diverged = true;
                    break;
                }
                if (step == evalSteps[next]) {
                    valLoss[next] = validationLoss(trainee.model(), validation, cell.context());
                    seconds[next] = trained;
                    progress.accept(new double[] {step, valLoss[next], trained});
                    next++;
                }
            }
        }
        double wall = (System.nanoTime() - wallStart) / 1e9;
        return new StudyResult(cell, evalSteps, valLoss, seconds, diverged, wall, torch.get_num_threads(), workers,
                loadStart.orElse(Double.NaN), MachineLoad.now().orElse(Double.NaN), StudyMachine.here(), corpusName,
                started);
    }

    /** The mean loss over the validation windows, in forward passes of {@value #VALIDATION_BATCH} windows. */
    static double validationLoss(CharTransformer model, Tensor validation, int context) {
        long windows = validation.size(0);
        double sum = 0;
        long counted = 0;
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            for (long from = 0; from < windows; from += VALIDATION_BATCH) {
                long n = Math.min(VALIDATION_BATCH, windows - from);
                sum += TinyGpt.loss(model, validation.narrow(0, from, n), context).item_double() * n;
                counted += n;
            }
        }
        return sum / counted;
    }
}
