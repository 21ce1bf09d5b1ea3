package dev.muon.examples.study;

import dev.muon.examples.CharCorpus;
import dev.muon.examples.CharTransformer;
import dev.muon.examples.MachineLoad;
import dev.muon.examples.TinyGpt;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.OptionalDouble;
import java.util.Random;
import java.util.function.Consumer;

/**
 * Trains one {@link SecondCell} as the first study's {@link StudyRun} trains its cells: {@link CharTransformer} from
 * {@code torch.manual_seed(seed)}, batches drawn with {@code new Random(seed)} from the training text, the
 * validation loss on the corpus's fixed windows at the evaluation steps, training seconds that exclude the
 * evaluations, and a stop at the first training loss that is not finite. The optimizer is the arm's
 * ({@link SecondOptimizer}), following the cell's schedule; nothing is clipped. Safe to call from several threads at
 * once, one cell per thread: the seeding of the weights, which goes through libtorch's one global generator, is done
 * under a lock.
 */
final class SecondRun {
    private static final Object SEEDING = new Object();

    private SecondRun() {
    }

    /**
     * Builds a cell's model from its seed and its optimizer.
     *
     * @param corpus the corpus (its vocabulary)
     * @param cell   the cell
     * @param scale  the model's sizes and the run's length
     * @return the model, its optimizer and its batch generator; close it to free the optimizer's native state
     */
    static Trainee start(CharCorpus corpus, SecondCell cell, SecondScale scale) {
        CharTransformer model;
        // torch.manual_seed and the modules' initialisation share libtorch's global CPU generator: two threads
        // building at once would each get some of the other's numbers.
        synchronized (SEEDING) {
            torch.manual_seed(cell.seed());
            model = new CharTransformer(corpus.vocabularySize(), scale.context(), scale.width(), scale.layers(),
                    scale.heads());
        }
        return new Trainee(model, SecondOptimizer.build(model, cell, scale.schedule(cell)), new Random(cell.seed()),
                scale);
    }

    /** A model, its optimizer and its batch generator, ready to step. */
    record Trainee(CharTransformer model, SecondOptimizer optimizer, Random batches, SecondScale scale)
            implements AutoCloseable {
        /**
         * One training step on the next batch.
         *
         * @param corpus the corpus
         * @param step   the step, from 1: the schedule's lr is that of step {@code step - 1}, 0-based
         * @return the training loss
         */
        double step(CharCorpus corpus, long step) {
            try (PointerScope scope = new PointerScope()) {
                Tensor batch = corpus.batch(batches, false, scale.batch(), scale.context());
                optimizer.beforeForward(step);
                Tensor loss = TinyGpt.loss(model, batch, scale.context());
                loss.backward();
                optimizer.step();
                return loss.item_double();
            }
        }

        @Override
        public void close() {
            optimizer.close();
        }
    }

    /**
     * Trains the cell.
     *
     * @param data     the cell's corpus and its validation windows
     * @param cell     the cell
     * @param scale    the model's sizes, the run's length and its evaluations
     * @param workers  runs training at once in this JVM, for the row
     * @param progress told each evaluation: step, validation loss, training seconds
     * @return the finished run
     * @throws IllegalArgumentException if the data is another corpus's than the cell's
     */
    static SecondResult train(SecondData data, SecondCell cell, SecondScale scale, int workers,
                              Consumer<double[]> progress) {
        if (!data.id().equals(cell.corpus())) {
            throw new IllegalArgumentException("the cell trains on " + cell.corpus() + ", got the data of "
                    + data.id());
        }
        String started = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        OptionalDouble loadStart = MachineLoad.now();
        long wallStart = System.nanoTime();
        int[] evalSteps = scale.evalSteps(cell);
        double[] valLoss = new double[evalSteps.length];
        double[] seconds = new double[evalSteps.length];
        Arrays.fill(valLoss, Double.NaN);
        Arrays.fill(seconds, Double.NaN);
        boolean diverged = false;
        try (PointerScope scope = new PointerScope(); Trainee trainee = start(data.corpus(), cell, scale)) {
            double trained = 0;
            valLoss[0] = StudyRun.validationLoss(trainee.model(), data.validation(), scale.context());
            seconds[0] = 0;
            progress.accept(new double[] {0, valLoss[0], 0});
            int next = 1;
            int steps = scale.steps(cell);
            for (int step = 1; step <= steps; step++) {
                long t0 = System.nanoTime();
                double loss = trainee.step(data.corpus(), step);
                trained += (System.nanoTime() - t0) / 1e9;
                if (!Double.isFinite(loss)) {
                    // An lr too large for the optimizer: the rest of the run would only cost time.
                    diverged = true;
                    break;
                }
                if (step == evalSteps[next]) {
                    valLoss[next] = StudyRun.validationLoss(trainee.model(), data.validation(), scale.context());
                    seconds[next] = trained;
                    progress.accept(new double[] {step, valLoss[next], trained});
                    next++;
                }
            }
        }
        double wall = (System.nanoTime() - wallStart) / 1e9;
        return new SecondResult(cell, evalSteps, valLoss, seconds, diverged, wall, torch.get_num_threads(), workers,
                loadStart.orElse(Double.NaN), MachineLoad.now().orElse(Double.NaN), StudyMachine.here(), data.file(),
                started);
    }
}
