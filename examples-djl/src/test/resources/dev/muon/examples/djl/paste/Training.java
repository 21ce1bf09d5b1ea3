package paste;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;

/**
 * A training method of one's own: the config is built where the optimizer is, then a model trains a few steps on one
 * batch. A snippet replaces the config, or runs after the trainer is initialized.
 */
public final class Training {
    private Training() {
    }

    /** Whether the model's layers have biases (plain Muon takes none). */
    static boolean bias = true;

    public static float[] run() {
        int totalSteps = 10;
        // PASTE config
        Optimizer optimizer = Optimizer.adam().optLearningRateTracker(Tracker.fixed(1e-3f)).build();
        DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optOptimizer(optimizer);
        // END
        SequentialBlock block = new SequentialBlock().add(Linear.builder().setUnits(16).optBias(bias).build())
                .add(Activation.reluBlock()).add(Linear.builder().setUnits(16).optBias(bias).build())
                .add(Activation.reluBlock()).add(Linear.builder().setUnits(3).optBias(bias).build());
        try (Model model = Model.newInstance("training")) {
            model.setBlock(block);
            try (Trainer trainer = model.newTrainer(config)) {
                Engine.getInstance().setRandomSeed(3);
                trainer.initialize(new Shape(8, 6));
                // PASTE afterInitialize
                // END
                NDArray x = trainer.getManager().randomNormal(new Shape(8, 6));
                NDArray y = trainer.getManager().create(new float[] {0, 1, 2, 0, 1, 2, 0, 1});
                float[] losses = new float[2];
                for (int step = 0; step < totalSteps; step++) {
                    try (GradientCollector collector = trainer.newGradientCollector()) {
                        NDArray loss = trainer.getLoss().evaluate(new NDList(y), trainer.forward(new NDList(x)));
                        collector.backward(loss);
                        losses[step == 0 ? 0 : 1] = loss.getFloat();
                    }
                    trainer.step();
                }
                return losses;
            }
        }
    }
}
