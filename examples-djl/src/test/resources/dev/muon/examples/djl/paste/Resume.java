package paste;

import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import dev.muon.djl.MuonAdamW;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A run that saves its model and optimizer after a few steps, and a second program that resumes it: a snippet is
 * the saving lines, or the resuming ones.
 */
public final class Resume {
    private Resume() {
    }

    static SequentialBlock mlp() {
        return new SequentialBlock().add(Blocks.batchFlattenBlock(28 * 28))
                .add(Linear.builder().setUnits(32).build()).add(Activation::relu)
                .add(Linear.builder().setUnits(10).build());
    }

    static void steps(Trainer trainer, int steps) {
        NDArray x = trainer.getManager().randomUniform(0, 1, new Shape(16, 28 * 28));
        NDArray y = trainer.getManager().randomInteger(0, 10, new Shape(16), ai.djl.ndarray.types.DataType.FLOAT32);
        for (int step = 0; step < steps; step++) {
            try (GradientCollector collector = trainer.newGradientCollector()) {
                collector.backward(trainer.getLoss().evaluate(new NDList(y), trainer.forward(new NDList(x))));
            }
            trainer.step();
        }
    }

    public static Long run() throws Exception {
        Path dir = Files.createTempDirectory("resume");
        try (Model model = Model.newInstance("mlp")) {
            model.setBlock(mlp());
            MuonAdamW optimizer = MuonAdamW.builder().build();
            try (Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                trainer.initialize(new Shape(1, 28 * 28));
                steps(trainer, 3);
                // PASTE save
                // END
            }
        }
        try (Model model = Model.newInstance("mlp")) {
            model.setBlock(mlp());
            MuonAdamW optimizer = MuonAdamW.builder().build();
            // PASTE resume
            Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()));
            trainer.initialize(new Shape(1, 28 * 28));
            // END
            try (trainer) {
                if (optimizer.stepCount() != 3) {
                    throw new IllegalStateException("the optimizer did not resume at step 3: "
                            + optimizer.stepCount());
                }
                steps(trainer, 3);
                return optimizer.stepCount();
            }
        }
    }
}
