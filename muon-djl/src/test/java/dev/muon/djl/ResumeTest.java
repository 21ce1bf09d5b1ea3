package dev.muon.djl;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.ParameterTracker;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import dev.muon.AdamWConfig;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.state.CheckpointBytes;
import dev.muon.state.StateFileException;
import dev.muon.state.StateMismatchException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Resumable training through DJL: a seeded run stopped after some steps, its weights saved with DJL's
 * {@code model.save} and its optimizer with {@code save}, then resumed in a new model, trainer and optimizer with
 * {@code model.load} and {@code load}, ends bit for bit where the same run ends uninterrupted: every parameter, every
 * state buffer, the step count, a tracker's lr. A checkpoint that does not fit is refused, listing every difference,
 * and changes nothing; {@code optBeginNumUpdate} starts the count as DJL's optimizers do.
 */
class ResumeTest {
    private static final int INPUTS = 16;
    private static final int BATCH = 8;
    private static final int STEPS = 8;
    private static final int STOP = 3;
    private static final Shape INPUT = new Shape(BATCH, INPUTS);

    @TempDir
    Path dir;

    static SequentialBlock mlp(boolean bias) {
        return BindingTest.mlp(bias);
    }

    /** The batches of a run: fixed Gaussian inputs, labels from a fixed teacher. */
    private static List<NDList> batches(NDManager manager) {
        Random random = new Random(11);
        List<NDList> out = new ArrayList<>();
        for (int b = 0; b < STEPS; b++) {
            float[] x = new float[BATCH * INPUTS];
            float[] y = new float[BATCH];
            for (int i = 0; i < BATCH; i++) {
                double sum = 0;
                for (int j = 0; j < INPUTS; j++) {
                    x[i * INPUTS + j] = (float) random.nextGaussian();
                    sum += x[i * INPUTS + j] * (j % 3 - 1);
                }
                y[i] = sum > 0.5 ? 2 : sum < -0.5 ? 0 : 1;
            }
            out.add(new NDList(manager.create(x, INPUT), manager.create(y, new Shape(BATCH))));
        }
        return out;
    }

    /** What a run ends with: every parameter's and every saved tensor's bytes, and the step count. */
    record End(Map<String, float[]> parameters, Map<String, byte[]> state, long steps) {
    }

    /** An optimizer of the variant, and its trainer's config. */
    interface Variant {
        Optimizer build();

        default DefaultTrainingConfig config(Optimizer optimizer) {
            DefaultTrainingConfig config = optimizer instanceof MuonAdamW hybrid
                    ? hybrid.trainingConfig(Loss.softmaxCrossEntropyLoss())
                    : ((Muon) optimizer).trainingConfig(Loss.softmaxCrossEntropyLoss());
            return config.optDevices(new Device[] {Device.cpu()});
        }
    }

    static Stream<Arguments> variants() {
        Tracker cosine = Tracker.cosine().setBaseValue(1e-2f).optFinalValue(1e-4f).setMaxUpdates(STEPS).build();
        return Stream.of(
                Arguments.of("MuonAdamW with a cosine tracker", true, (Variant) () -> MuonAdamW.builder()
                        .optLearningRateTracker(cosine).build()),
                Arguments.of("MuonAdamW with NorMuon", true, (Variant) () -> MuonAdamW.builder()
                        .optMuon(MuonConfig.dropIn(1e-2, AdamWConfig.defaults().weightDecay())
                                .withNorMuon(NorMuonConfig.defaults()))
                        .optAdamW(AdamWConfig.defaults().withLr(1e-2)).build()),
                Arguments.of("plain Muon", false, (Variant) () -> Muon.builder()
                        .optConfig(MuonConfig.defaults().withLr(0.02)).build()));
    }

    private static void train(Trainer trainer, List<NDList> data, int from, int to) {
        for (int step = from; step < to; step++) {
            NDList batch = data.get(step);
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDArray prediction = trainer.forward(new NDList(batch.get(0))).singletonOrThrow();
                collector.backward(trainer.getLoss().evaluate(new NDList(batch.get(1)), new NDList(prediction)));
            }
            trainer.step();
        }
    }

    private static Map<String, float[]> parameters(Block block) {
        Map<String, float[]> out = new LinkedHashMap<>();
        for (Pair<String, Parameter> p : block.getParameters()) {
            out.put(p.getKey(), p.getValue().getArray().toFloatArray());
        }
        return out;
    }

    private End end(Block block, Optimizer optimizer, String name) {
        Path file = dir.resolve(name + "-end.ckpt");
        long steps;
        if (optimizer instanceof MuonAdamW hybrid) {
            hybrid.save(file);
            steps = hybrid.stepCount();
        } else {
            ((Muon) optimizer).save(file);
            steps = ((Muon) optimizer).stepCount();
        }
        Map<String, byte[]> state = new LinkedHashMap<>();
        CheckpointBytes.read(file, d -> { }).tensors().forEach((k, t) -> {
            byte[] bytes = new byte[t.data().remaining()];
            t.data().get(bytes);
            state.put(k, bytes);
        });
        return new End(parameters(block), state, steps);
    }

    private End straight(Variant variant, boolean bias) {
        try (Model model = Model.newInstance("straight")) {
            SequentialBlock block = mlp(bias);
            model.setBlock(block);
            Optimizer optimizer = variant.build();
            try (Trainer trainer = model.newTrainer(variant.config(optimizer))) {
                Engine.getInstance().setRandomSeed(42);
                trainer.initialize(INPUT);
                train(trainer, batches(trainer.getManager()), 0, STEPS);
                return end(block, optimizer, "straight");
            }
        }
    }

    private End resumed(Variant variant, boolean bias) throws IOException {
        Path weights = Files.createDirectories(dir.resolve("weights"));
        Path checkpoint = dir.resolve("optimizer.ckpt");
        try (Model model = Model.newInstance("mlp")) {
            model.setBlock(mlp(bias));
            Optimizer optimizer = variant.build();
            try (Trainer trainer = model.newTrainer(variant.config(optimizer))) {
                Engine.getInstance().setRandomSeed(42);
                trainer.initialize(INPUT);
                train(trainer, batches(trainer.getManager()), 0, STOP);
                model.save(weights, "mlp");
                if (optimizer instanceof MuonAdamW hybrid) {
                    hybrid.save(checkpoint);
                } else {
                    ((Muon) optimizer).save(checkpoint);
                }
            }
        }
        try (Model model = Model.newInstance("mlp")) {
            SequentialBlock block = mlp(bias);
            model.setBlock(block);
            model.load(weights, "mlp");
            Optimizer optimizer = variant.build();
            try (Trainer trainer = model.newTrainer(variant.config(optimizer))) {
                trainer.initialize(INPUT);
                if (optimizer instanceof MuonAdamW hybrid) {
                    hybrid.load(checkpoint);
                    assertEquals(STOP, hybrid.stepCount());
                } else {
                    ((Muon) optimizer).load(checkpoint);
                }
                train(trainer, batches(trainer.getManager()), STOP, STEPS);
                return end(block, optimizer, "resumed");
            }
        } catch (ai.djl.MalformedModelException e) {
            throw new IllegalStateException(e);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void aResumedRun_endsBitForBit_whereTheUninterruptedRunEnds(String label, boolean bias, Variant variant)
            throws IOException {
        End straight = straight(variant, bias);
        End resumed = resumed(variant, bias);
        assertEquals(STEPS, straight.steps(), label);
        assertEquals(straight.steps(), resumed.steps(), label);
        assertEquals(straight.parameters().keySet(), resumed.parameters().keySet());
        for (String name : straight.parameters().keySet()) {
            assertArrayEquals(straight.parameters().get(name), resumed.parameters().get(name), label + ": " + name);
        }
        assertEquals(straight.state().keySet(), resumed.state().keySet(), label);
        assertTrue(straight.state().keySet().stream().anyMatch(k -> k.startsWith("momentum/")), label);
        for (String name : straight.state().keySet()) {
            assertArrayEquals(straight.state().get(name), resumed.state().get(name), label + ": " + name);
        }
    }

    /** A model trained {@code steps} steps with a MuonAdamW of the settings, its checkpoint saved; returns it. */
    private Path trained(Function<MuonAdamW.Builder, MuonAdamW.Builder> settings, int steps, String name) {
        Path file = dir.resolve(name + ".ckpt");
        try (Model model = Model.newInstance(name)) {
            model.setBlock(mlp(true));
            MuonAdamW optimizer = settings.apply(MuonAdamW.builder()).build();
            try (Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                Engine.getInstance().setRandomSeed(42);
                trainer.initialize(INPUT);
                train(trainer, batches(trainer.getManager()), 0, steps);
                optimizer.save(file);
            }
        }
        return file;
    }

    @Test
    void aCheckpointThatDoesNotFit_isRefused_listingEveryDifference_andChangesNothing() {
        Path other = trained(b -> b.optMuon(MuonConfig.dropIn(1e-3, 1e-2).withNsSteps(3)), 2, "other");
        try (Model model = Model.newInstance("fit")) {
            SequentialBlock block = mlp(true);
            model.setBlock(block);
            MuonAdamW optimizer = MuonAdamW.builder().optOutputLayerOnAdamW(false).build();
            try (Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                trainer.initialize(INPUT);
                train(trainer, batches(trainer.getManager()), 0, 1);
                Map<String, float[]> before = parameters(block);
                StateMismatchException e = assertThrows(StateMismatchException.class, () -> optimizer.load(other));
                assertTrue(e.getMessage().contains("(2 differences)"), e.getMessage());
                assertTrue(e.getMessage().contains("muon group 0 nsSteps: this optimizer 5, the state 3 (a build "
                        + "setting: build the optimizer with nsSteps 3)"), e.getMessage());
                assertTrue(e.getMessage().contains("'05Linear_weight' optimizer: this optimizer MUON, the state "
                        + "ADAMW"), e.getMessage());
                parameters(block).forEach((name, values) -> assertArrayEquals(before.get(name), values, name));
                assertEquals(1, optimizer.stepCount());
            }
        }
    }

    @Test
    void aCorruptCheckpoint_isRefused_byItsChecksum() throws IOException {
        Path file = trained(b -> b, 1, "good");
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length - 3] ^= 1;
        Path corrupt = Files.write(dir.resolve("corrupt.ckpt"), bytes);
        try (Model model = Model.newInstance("corrupt")) {
            model.setBlock(mlp(true));
            MuonAdamW optimizer = MuonAdamW.builder().build();
            try (Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                trainer.initialize(INPUT);
                StateFileException e = assertThrows(StateFileException.class, () -> optimizer.load(corrupt));
                assertTrue(e.getMessage().contains("the file does not match its SHA-256"), e.getMessage());
            }
        }
    }

    /** A tracker that records the update counts it is asked for. */
    private static final class Recording implements ParameterTracker {
        final List<Integer> asked = new ArrayList<>();

        @Override
        public float getNewValue(String parameterId, int numUpdate) {
            asked.add(numUpdate);
            return 1e-2f;
        }
    }

    @Test
    void optBeginNumUpdate_startsTheCount_asDjlsOptimizersDo() {
        Recording tracker = new Recording();
        try (Model model = Model.newInstance("begin")) {
            SequentialBlock block = mlp(true);
            model.setBlock(block);
            MuonAdamW optimizer = MuonAdamW.builder().optLearningRateTracker(tracker).optBeginNumUpdate(7).build();
            try (Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                Engine.getInstance().setRandomSeed(42);
                trainer.initialize(INPUT);
                assertEquals(7, optimizer.stepCount());
                NDArray bias = block.getParameters().get("05Linear_bias").getArray();
                float[] p0 = bias.toFloatArray();
                tracker.asked.clear();
                NDList batch = batches(trainer.getManager()).get(0);
                try (GradientCollector collector = trainer.newGradientCollector()) {
                    NDArray prediction = trainer.forward(new NDList(batch.get(0))).singletonOrThrow();
                    collector.backward(trainer.getLoss().evaluate(new NDList(batch.get(1)), new NDList(prediction)));
                }
                float[] g = bias.getGradient().toFloatArray();
                trainer.step();
                assertEquals(8, optimizer.stepCount());
                assertTrue(tracker.asked.stream().allMatch(n -> n == 8), "the tracker is asked at 8: "
                        + tracker.asked);
                // AdamW's first update counts t = 8, as DJL's Adam does after optBeginNumUpdate(7).
                AdamWConfig c = optimizer.adamWConfig();
                float[] p1 = bias.toFloatArray();
                for (int i = 0; i < p0.length; i++) {
                    double m = (1 - c.beta1()) * g[i];
                    double v = (1 - c.beta2()) * g[i] * g[i];
                    double expected = p0[i] * (1 - 1e-2 * c.weightDecay())
                            - 1e-2 / (1 - Math.pow(c.beta1(), 8)) * m
                            / (Math.sqrt(v) / Math.sqrt(1 - Math.pow(c.beta2(), 8)) + c.eps());
                    assertEquals(expected, p1[i], 1e-6, "element " + i);
                }
            }
        }
        Path checkpoint = trained(b -> b, 2, "two");
        try (Model model = Model.newInstance("mismatch")) {
            model.setBlock(mlp(true));
            MuonAdamW optimizer = MuonAdamW.builder().optBeginNumUpdate(7).build();
            try (Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                trainer.initialize(INPUT);
                StateMismatchException e = assertThrows(StateMismatchException.class,
                        () -> optimizer.load(checkpoint));
                assertTrue(e.getMessage().contains("step count: this optimizer 7 (optBeginNumUpdate), the state 2 (a "
                        + "checkpoint carries its step: build without optBeginNumUpdate, or with the checkpoint's)"),
                        e.getMessage());
            }
        }
    }

    @Test
    void load_takesTheCheckpointsValues_bitForBit() {
        Path file = trained(b -> b, 2, "values");
        CheckpointBytes.Contents saved = CheckpointBytes.read(file, d -> { });
        try (Model model = Model.newInstance("values")) {
            SequentialBlock block = mlp(true);
            model.setBlock(block);
            MuonAdamW optimizer = MuonAdamW.builder().build();
            try (Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                Engine.getInstance().setRandomSeed(7);
                trainer.initialize(INPUT);
                float[] fresh = block.getParameters().get("01Linear_weight").getArray().toFloatArray();
                optimizer.load(file);
                for (Pair<String, Parameter> p : block.getParameters()) {
                    java.nio.FloatBuffer expected = saved.tensor("value", p.getKey()).data().asFloatBuffer();
                    float[] values = new float[expected.remaining()];
                    expected.get(values);
                    assertArrayEquals(values, p.getValue().getArray().toFloatArray(), p.getKey());
                }
                assertTrue(!java.util.Arrays.equals(fresh, block.getParameters().get("01Linear_weight").getArray()
                        .toFloatArray()), "the values changed from the fresh model's");
                assertEquals(2, optimizer.stepCount());
            }
        }
    }

    @Test
    void aCheckpointOfMuonDjl_isMuonCoresFormat() {
        Path file = trained(b -> b, 2, "format");
        CheckpointBytes.Contents read = CheckpointBytes.read(file, d -> { });
        assertEquals(2, read.document().step());
        assertEquals("Float", read.document().parameters().get(0).dtype());
        assertEquals(List.of("value/01Linear_weight", "momentum/01Linear_weight", "value/01Linear_bias",
                "exp_avg/01Linear_bias", "exp_avg_sq/01Linear_bias"), read.tensors().keySet().stream().limit(5)
                .toList());
        assertEquals(2L, read.document().parameter("01Linear_bias").orElseThrow().adamWStep());
    }

    @Test
    void loadingBeforeTheParametersExist_isRefused_sayingWhen() {
        Supplier<MuonAdamW> unbound = () -> MuonAdamW.builder().build();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> unbound.get().load(dir.resolve("x.ckpt")));
        assertTrue(e.getMessage().startsWith("MuonAdamW is not bound to a model"), e.getMessage());
    }
}
