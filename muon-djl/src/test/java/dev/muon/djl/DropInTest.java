package dev.muon.djl;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The drop-in: one DJL model trained through DJL's own {@code Trainer} with DJL's {@code Adam} and with
 * {@link MuonAdamW}, one line apart, from the same weights on the same batches. Both must train; the hybrid must
 * leave every gradient zeroed after each step (as DJL's optimizers do), count DJL's steps, and apply, in its first
 * step, exactly Muon's and PyTorch's AdamW's updates to what the trainer handed it.
 */
class DropInTest {
    private static final int INPUTS = 16;
    private static final int CLASSES = 4;
    private static final int BATCH = 32;
    private static final int BATCHES = 4;
    private static final int STEPS = 40;
    private static final float LR = 0.01f;

    /** What a run leaves behind. */
    record Run(List<Float> losses, Map<String, float[]> initial, Map<String, float[]> firstGradients,
               Map<String, float[]> afterFirstStep, Optimizer optimizer) {
    }

    private static SequentialBlock mlp() {
        return AssignmentOnDjlBlocksTest.mlp();
    }

    /** A learnable task: labels from a fixed random linear teacher on Gaussian inputs. */
    private static List<NDList> batches(NDManager manager) {
        Random random = new Random(5);
        double[][] teacher = new double[INPUTS][CLASSES];
        for (double[] row : teacher) {
            for (int c = 0; c < CLASSES; c++) {
                row[c] = random.nextGaussian();
            }
        }
        List<NDList> out = new ArrayList<>();
        for (int b = 0; b < BATCHES; b++) {
            float[] x = new float[BATCH * INPUTS];
            float[] y = new float[BATCH];
            for (int i = 0; i < BATCH; i++) {
                double[] logits = new double[CLASSES];
                for (int j = 0; j < INPUTS; j++) {
                    x[i * INPUTS + j] = (float) random.nextGaussian();
                    for (int c = 0; c < CLASSES; c++) {
                        logits[c] += x[i * INPUTS + j] * teacher[j][c];
                    }
                }
                int best = 0;
                for (int c = 1; c < CLASSES; c++) {
                    best = logits[c] > logits[best] ? c : best;
                }
                y[i] = best;
            }
            out.add(new NDList(manager.create(x, new Shape(BATCH, INPUTS)), manager.create(y, new Shape(BATCH))));
        }
        return out;
    }

    private static Map<String, float[]> values(Block block, boolean gradients) {
        Map<String, float[]> out = new LinkedHashMap<>();
        for (Pair<String, Parameter> p : block.getParameters()) {
            NDArray a = p.getValue().getArray();
            out.put(p.getKey(), (gradients ? a.getGradient() : a).toFloatArray());
        }
        return out;
    }

    private static Run train(Function<Block, Optimizer> optimizerFor) {
        try (Model model = Model.newInstance("mlp")) {
            SequentialBlock block = mlp();
            model.setBlock(block);
            Optimizer optimizer = optimizerFor.apply(block);
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(optimizer).optDevices(new Device[] {Device.cpu()});
            try (Trainer trainer = model.newTrainer(config)) {
                Engine.getInstance().setRandomSeed(42);
                trainer.initialize(new Shape(BATCH, INPUTS));
                List<NDList> data = batches(trainer.getManager());
                Map<String, float[]> initial = values(block, false);
                Map<String, float[]> firstGradients = null;
                Map<String, float[]> afterFirst = null;
                List<Float> losses = new ArrayList<>();
                for (int step = 0; step < STEPS; step++) {
                    NDList batch = data.get(step % BATCHES);
                    try (GradientCollector collector = trainer.newGradientCollector()) {
                        NDArray prediction = trainer.forward(new NDList(batch.get(0))).singletonOrThrow();
                        NDArray loss = trainer.getLoss().evaluate(new NDList(batch.get(1)), new NDList(prediction));
                        collector.backward(loss);
                        losses.add(loss.getFloat());
                    }
                    if (step == 0) {
                        firstGradients = values(block, true);
                    }
                    trainer.step();
                    if (step == 0) {
                        afterFirst = values(block, false);
                    }
                    for (Map.Entry<String, float[]> g : values(block, true).entrySet()) {
                        assertArrayEquals(new float[g.getValue().length], g.getValue(),
                                g.getKey() + ": the gradient is zeroed after the step");
                    }
                }
                return new Run(losses, initial, firstGradients, afterFirst, optimizer);
            }
        }
    }

    @Test
    void djlAdam_andTheHybrid_oneLineApart_trainTheSameModel() {
        Run adam = train(block -> Optimizer.adam().optLearningRateTracker(Tracker.fixed(LR)).build());
        Run hybrid = train(block -> MuonAdamW.builder().optBlock(block).optLearningRateTracker(Tracker.fixed(LR))
                .build());

        for (String name : adam.initial().keySet()) {
            assertArrayEquals(adam.initial().get(name), hybrid.initial().get(name), name + ": same initial weights");
        }
        assertEquals(adam.losses().get(0), hybrid.losses().get(0), "same first loss");
        for (Run run : List.of(adam, hybrid)) {
            double last = run.losses().subList(STEPS - BATCHES, STEPS).stream().mapToDouble(f -> f).average()
                    .orElseThrow();
            assertTrue(last < 0.7 * run.losses().get(0), run.optimizer().getClass().getSimpleName() + " trains: "
                    + run.losses());
        }
        MuonAdamW opt = (MuonAdamW) hybrid.optimizer();
        assertEquals(STEPS, opt.stepCount());
        assertEquals(List.of("01Linear_weight", "03Linear_weight"), opt.assignment().names(OptimizerKind.MUON));
        firstStep_isMuonsAndAdamWsUpdate(hybrid, opt);
    }

    /** The first step, recomputed from what the trainer handed over: Muon on a hidden matrix, AdamW on a bias. */
    private static void firstStep_isMuonsAndAdamWsUpdate(Run run, MuonAdamW opt) {
        MuonConfig muon = opt.muonConfig();
        double wd = opt.adamWConfig().weightDecay();
        assertEquals(wd, muon.weightDecay(), "the drop-in Muon config carries AdamW's weight decay");
        assertEquals(LR, opt.assignment().rows().get(2).lr() / (0.2 * Math.sqrt(16)), 1e-9,
                "the tracker's lr, in the table too");
        try (NDManager manager = NDManager.newBaseManager()) {
            float[] g = run.firstGradients().get("03Linear_weight");
            NDArray o = NsIteration.orthogonalize(manager.create(g, new Shape(16, 16)), muon.newtonSchulz());
            double scaled = LR * 0.2 * Math.sqrt(16);
            float[] p0 = run.initial().get("03Linear_weight");
            float[] oValues = o.toFloatArray();
            float[] expected = new float[p0.length];
            for (int i = 0; i < p0.length; i++) {
                // With Nesterov, the first step's U is g·(1 − μ)·(1 + μ), and Newton–Schulz ignores the scale; the
                // tracker's lr replaces the config's, in the decay too.
                expected[i] = (float) (p0[i] * (1 - LR * wd) - scaled * oValues[i]);
            }
            assertArrayEquals(expected, run.afterFirstStep().get("03Linear_weight"), 1e-5f, "Muon's first step");
        }
        float[] g = run.firstGradients().get("05Linear_bias");
        float[] p0 = run.initial().get("05Linear_bias");
        float[] expected = new float[p0.length];
        double eps = opt.adamWConfig().eps();
        for (int i = 0; i < p0.length; i++) {
            // t = 1: m̂ = g and sqrt(v̂) = |g|.
            expected[i] = (float) (p0[i] * (1 - LR * wd) - LR * g[i] / (Math.abs(g[i]) + eps));
        }
        assertArrayEquals(expected, run.afterFirstStep().get("05Linear_bias"), 1e-6f, "AdamW's first step");
    }
}
