package dev.muon.examples.djl;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.Batch;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.muon.djl.MuonAdamW;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * DJL's MNIST MLP ({@code 784 → 128 → 64 → 10}, ReLU, as DJL's {@code Mlp} of its MNIST example) trained on
 * Fashion-MNIST with DJL's built-in {@code Adam} and with muon-djl's {@link MuonAdamW}, from the same initial
 * weights on the same batches; it prints test accuracy and training seconds side by side. The two training
 * methods, {@link #trainWithAdam} and {@link #trainWithMuonAdamW}, differ by the line that builds the training config
 * and its optimizer.
 *
 * <p>Data: {@code --data DIR}, default Debian's {@code dataset-fashion-mnist} ({@value
 * FashionMnistDatasets#DEBIAN_DIR}). Run from the repository root ({@code --help} lists the options):
 * <pre>
 * mvn -B -q -pl examples-djl -am -Ptrain-djl -DskipTests package
 * mvn -B -q -pl examples-djl -am -Ptrain-djl -DskipTests package -Dexample.args="--epochs 5"
 * </pre>
 * The profile sets {@code OPT_OUT_TRACKING=true} and {@code DJL_OFFLINE=true}: DJL then never calls out, and runs
 * on the libtorch its CPU jar bundles.
 */
@Command(name = "FashionMnistDjl", mixinStandardHelpOptions = true,
        description = "Trains DJL's MNIST MLP on Fashion-MNIST with DJL's Adam and with muon-djl's MuonAdamW.")
public final class FashionMnistDjl implements Callable<Integer> {
    @Option(names = "--data", paramLabel = "DIR", defaultValue = FashionMnistDatasets.DEBIAN_DIR,
            description = "folder of the four IDX files (default: ${DEFAULT-VALUE})")
    Path data;

    @Option(names = "--epochs", defaultValue = "3", description = "epochs per run (default: ${DEFAULT-VALUE})")
    int epochs;

    @Option(names = "--batch", defaultValue = "128", description = "batch size (default: ${DEFAULT-VALUE})")
    int batch;

    @Option(names = "--lr", defaultValue = "1e-3",
            description = "learning rate of both optimizers (default: ${DEFAULT-VALUE})")
    float lr;

    @Option(names = "--train-size", defaultValue = "0",
            description = "training images used, 0 for all 60,000 (default: ${DEFAULT-VALUE})")
    int trainSize;

    @Option(names = "--seed", defaultValue = "1",
            description = "seed of the weights and the batch order (default: ${DEFAULT-VALUE})")
    int seed;

    /**
     * What both runs share.
     *
     * @param epochs the epochs
     * @param lr     the learning rate
     * @param seed   the seed of the initial weights and of the batch order
     */
    record Settings(int epochs, float lr, int seed) {
    }

    /**
     * One run's outcome.
     *
     * @param accuracy the test accuracy after the last epoch, in [0, 1]
     * @param seconds  the training time (evaluation excluded)
     */
    record Result(double accuracy, double seconds) {
    }

    /**
     * Runs the command line.
     *
     * @param args the options ({@code --help} lists them)
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new FashionMnistDjl()).execute(args));
    }

    @Override
    public Integer call() {
        Settings settings = new Settings(epochs, lr, seed);
        try (NDManager manager = NDManager.newBaseManager()) {
            FashionMnistDatasets datasets = FashionMnistDatasets.load(manager, data, trainSize, batch);
            System.out.println(datasets.source() + "; DJL's MNIST MLP 784-128-64-10, " + epochs + " epochs, batch "
                    + batch + ", lr " + lr + ", seed " + seed);
            Result adam = trainWithAdam(datasets, settings);
            Result muon = trainWithMuonAdamW(datasets, settings);
            System.out.printf(Locale.ROOT, "%-26s  %13s  %13s%n", "optimizer", "test accuracy", "train seconds");
            System.out.printf(Locale.ROOT, "%-26s  %11.2f %%  %13.1f%n", "DJL Adam", 100 * adam.accuracy(),
                    adam.seconds());
            System.out.printf(Locale.ROOT, "%-26s  %11.2f %%  %13.1f%n", "muon-djl MuonAdamW", 100 * muon.accuracy(),
                    muon.seconds());
        }
        return 0;
    }

    /**
     * DJL's MNIST MLP: {@code 784 → 128 → 64 → 10} with ReLU, as {@code ai.djl.basicmodelzoo.basic.Mlp} builds it.
     *
     * @return a new, uninitialized block
     */
    static SequentialBlock mlp() {
        return new SequentialBlock().add(Blocks.batchFlattenBlock(28 * 28))
                .add(Linear.builder().setUnits(128).build()).add(Activation.reluBlock())
                .add(Linear.builder().setUnits(64).build()).add(Activation.reluBlock())
                .add(Linear.builder().setUnits(10).build());
    }

    /**
     * Trains with DJL's built-in Adam.
     *
     * @param data     the datasets
     * @param settings the shared settings
     * @return the outcome
     */
    static Result trainWithAdam(FashionMnistDatasets data, Settings settings) {
        Tracker lr = Tracker.fixed(settings.lr());
        DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optOptimizer(Optimizer.adam().optLearningRateTracker(lr).build());
        return train(config, data, settings);
    }

    /**
     * Trains with muon-djl's hybrid: the method above with the statement that builds the config and its optimizer
     * changed (the optimizer binds itself to the model when the trainer is created).
     *
     * @param data     the datasets
     * @param settings the shared settings
     * @return the outcome
     */
    static Result trainWithMuonAdamW(FashionMnistDatasets data, Settings settings) {
        Tracker lr = Tracker.fixed(settings.lr());
        DefaultTrainingConfig config = MuonAdamW.builder().optLearningRateTracker(lr).build()
                .trainingConfig(Loss.softmaxCrossEntropyLoss());
        return train(config, data, settings);
    }

    /** DJL's training loop (EasyTrain's) on a new MLP, timed, then the test accuracy. */
    static Result train(DefaultTrainingConfig config, FashionMnistDatasets data, Settings settings) {
        try (Model model = Model.newInstance("fashion-mlp")) {
            model.setBlock(mlp());
            config.optDevices(new Device[] {Device.cpu()});
            try (Trainer trainer = model.newTrainer(config)) {
                // One seed for the initial weights (libtorch's generator) and the batch order (DJL's sampler).
                Engine.getInstance().setRandomSeed(settings.seed());
                trainer.initialize(new Shape(1, 28 * 28));
                long nanos = 0;
                for (int epoch = 0; epoch < settings.epochs(); epoch++) {
                    long start = System.nanoTime();
                    for (Batch batch : trainer.iterateDataset(data.train())) {
                        EasyTrain.trainBatch(trainer, batch);
                        trainer.step();
                        batch.close();
                    }
                    nanos += System.nanoTime() - start;
                }
                return new Result(accuracy(trainer, data), nanos / 1e9);
            }
        } catch (java.io.IOException | ai.djl.translate.TranslateException e) {
            throw new IllegalStateException("cannot iterate the dataset", e);
        }
    }

    /** The share of test images whose largest logit is their label's. */
    private static double accuracy(Trainer trainer, FashionMnistDatasets data)
            throws java.io.IOException, ai.djl.translate.TranslateException {
        long right = 0;
        long total = 0;
        for (Batch batch : trainer.iterateDataset(data.test())) {
            NDArray logits = trainer.evaluate(batch.getData()).singletonOrThrow();
            NDArray labels = batch.getLabels().singletonOrThrow();
            right += logits.argMax(1).toType(labels.getDataType(), false).eq(labels).sum().getLong();
            total += labels.size();
            batch.close();
        }
        return (double) right / total;
    }
}
