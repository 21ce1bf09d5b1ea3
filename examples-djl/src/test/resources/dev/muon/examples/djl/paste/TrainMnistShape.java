package paste;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.metric.Metrics;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingResult;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.translate.TranslateException;

import java.io.IOException;

/**
 * The shape of DJL's MNIST training example (an MLP 784-128-64-10 trained with EasyTrain.fit), on generated data:
 * the model is built in one method, and the training config in another that never sees the block.
 */
public final class TrainMnistShape {
    private TrainMnistShape() {
    }

    /** What DJL's examples read from the command line. */
    static final class Arguments {
        int getEpoch() {
            return 1;
        }

        int getBatchSize() {
            return 32;
        }

        int getMaxGpus() {
            return 0;
        }

        String getOutputDir() {
            try {
                return java.nio.file.Files.createTempDirectory("train-mnist").toString();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    public static TrainingResult run() throws IOException, TranslateException {
        Arguments arguments = new Arguments();
        Block block = new SequentialBlock().add(Blocks.batchFlattenBlock(28 * 28))
                .add(Linear.builder().setUnits(128).build()).add(Activation::relu)
                .add(Linear.builder().setUnits(64).build()).add(Activation::relu)
                .add(Linear.builder().setUnits(10).build());
        try (Model model = Model.newInstance("mlp")) {
            model.setBlock(block);
            RandomAccessDataset trainingSet = dataset(model.getNDManager(), 256, arguments.getBatchSize());
            RandomAccessDataset validateSet = dataset(model.getNDManager(), 64, arguments.getBatchSize());
            DefaultTrainingConfig config = setupTrainingConfig(arguments);
            try (Trainer trainer = model.newTrainer(config)) {
                trainer.setMetrics(new Metrics());
                trainer.initialize(new Shape(1, 28 * 28));
                EasyTrain.fit(trainer, arguments.getEpoch(), trainingSet, validateSet);
                return trainer.getTrainingResult();
            }
        }
    }

    private static DefaultTrainingConfig setupTrainingConfig(Arguments arguments) {
        String outputDir = arguments.getOutputDir();
        // PASTE config
        return new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
        // END
                .addEvaluator(new Accuracy())
                .optDevices(Engine.getInstance().getDevices(arguments.getMaxGpus()))
                .addTrainingListeners(TrainingListener.Defaults.logging(outputDir));
    }

    /** Images in [0, 1) whose label is the index of their largest pixel among the first ten. */
    private static RandomAccessDataset dataset(NDManager manager, int size, int batchSize) {
        float[] pixels = new float[size * 28 * 28];
        float[] labels = new float[size];
        java.util.Random random = new java.util.Random(size);
        for (int i = 0; i < size; i++) {
            int best = 0;
            for (int p = 0; p < 28 * 28; p++) {
                pixels[i * 28 * 28 + p] = random.nextFloat();
                if (p < 10 && pixels[i * 28 * 28 + p] > pixels[i * 28 * 28 + best]) {
                    best = p;
                }
            }
            labels[i] = best;
        }
        return new ArrayDataset.Builder()
                .setData(manager.create(pixels, new Shape(size, 28 * 28)))
                .optLabels(manager.create(labels, new Shape(size)).toType(DataType.FLOAT32, false))
                .setSampling(batchSize, true).build();
    }
}
