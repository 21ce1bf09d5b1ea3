package dev.muon.djl;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.initializer.NormalInitializer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.util.Pair;
import dev.muon.OptimizerKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The optimizers bind themselves to the trainer's model, as DJL's own examples build them (in a method that does not
 * see the block): the classification, its refusals and the table come when the trainer is initialized, before any
 * data is read; an optimizer handed a second model says so, naming parameters, never DJL's ids.
 */
class BindingTest {
    private static final Shape INPUT = new Shape(2, 8);

    static SequentialBlock mlp(boolean bias) {
        return new SequentialBlock().add(Linear.builder().setUnits(16).optBias(bias).build())
                .add(Activation.reluBlock()).add(Linear.builder().setUnits(16).optBias(bias).build())
                .add(Activation.reluBlock()).add(Linear.builder().setUnits(4).optBias(bias).build());
    }

    /** One forward, backward and step on a fixed batch. */
    static void step(Trainer trainer) {
        NDArray x = trainer.getManager().ones(INPUT);
        NDArray y = trainer.getManager().create(new float[] {0, 1});
        try (GradientCollector collector = trainer.newGradientCollector()) {
            collector.backward(trainer.getLoss().evaluate(new NDList(y), trainer.forward(new NDList(x))));
        }
        trainer.step();
    }

    @Test
    void trainingConfig_bindsWhenTheTrainerIsCreated_andClassifiesWhenItIsInitialized_loggingThroughSlf4j() {
        List<LogRecord> julRecords = new ArrayList<>();
        Handler jul = new Handler() {
            @Override
            public void publish(LogRecord record) {
                julRecords.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        root.addHandler(jul);
        RecordingLogs.clear();
        MuonAdamW optimizer = MuonAdamW.builder().build();
        try (Model model = Model.newInstance("bind")) {
            model.setBlock(mlp(true));
            try (Trainer trainer = model.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                assertTrue(RecordingLogs.of(MuonAdamW.class.getName()).isEmpty(), "nothing before initialize");
                trainer.initialize(INPUT);
                List<RecordingLogs.Event> events = RecordingLogs.of(MuonAdamW.class.getName());
                assertEquals(1, events.size(), "the table, once, when the trainer is initialized: " + events);
                assertTrue(events.get(0).message().contains("01Linear_weight  [16, 8]"), events.get(0).message());
                assertEquals(List.of("01Linear_weight", "03Linear_weight"),
                        optimizer.assignment().names(OptimizerKind.MUON));
                step(trainer);
                assertEquals(1, optimizer.stepCount());
            }
        } finally {
            root.removeHandler(jul);
        }
        assertTrue(julRecords.stream().noneMatch(r -> r.getLoggerName() != null
                && r.getLoggerName().startsWith("dev.muon")), "nothing of ours through java.util.logging");
    }

    static Stream<Arguments> mistakes() {
        return Stream.of(
                Arguments.of("an empty Muon group", (Supplier<Optimizer>) () -> MuonAdamW.builder()
                        .optForceAdamW("01Linear_weight", "03Linear_weight", "05Linear_weight").build(),
                        "no parameter was assigned to Muon, so this would train with AdamW alone. Muon takes 2-D and "
                                + "4-D weights whose names do not look like an embedding or a head; check the names "
                                + "below, send parameters with optForceMuon(..) or optMuonWhen(..), or call "
                                + "optAllowEmptyMuon(true) if AdamW alone is intended."),
                Arguments.of("a bias forced to Muon", (Supplier<Optimizer>) () -> MuonAdamW.builder()
                        .optForceMuon("03Linear_bias").build(), "Muon only supports 2-D parameters; parameter "
                        + "'03Linear_bias' has shape [16] (sent to Muon by optForceMuon)"),
                Arguments.of("plain Muon on a block with biases", (Supplier<Optimizer>) () -> Muon.builder().build(),
                        "Muon only supports 2-D parameters; parameter '01Linear_bias' has shape [16] (Muon updates "
                                + "every trainable parameter of its block; MuonAdamW sends biases and norms to AdamW)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("mistakes")
    void mistakes_areRefusedWhenTheTrainerIsInitialized(String label, Supplier<Optimizer> optimizer,
                                                        String message) {
        Optimizer opt = optimizer.get();
        DefaultTrainingConfig config = opt instanceof MuonAdamW hybrid
                ? hybrid.trainingConfig(Loss.softmaxCrossEntropyLoss())
                : ((Muon) opt).trainingConfig(Loss.softmaxCrossEntropyLoss());
        try (Model model = Model.newInstance("mistake")) {
            Block block = mlp(true);
            model.setBlock(block);
            try (Trainer trainer = model.newTrainer(config)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> trainer.initialize(INPUT), label);
                assertEquals(message, e.getMessage().split("\n")[0], label);
                for (Pair<String, Parameter> p : block.getParameters()) {
                    assertFalse(p.getValue().getInitializer().getClass().getName().contains("ModelBinding"),
                            p.getKey() + ": the block's own initializer is back");
                }
            }
        }
    }

    @Test
    void aConfigsInitializers_replacingTheWaitingOnes_afterAnOptBlockBind_areWrappedAgainByTheListener() {
        SequentialBlock block = mlp(false);
        MuonAdamW optimizer = MuonAdamW.builder().optBlock(block).optForceMuon("05Linear_weight", "03Linear_weight")
                .optForceAdamW("01Linear_weight").optOutputLayerOnAdamW(false).build();
        try (Model model = Model.newInstance("initializers")) {
            model.setBlock(block);
            DefaultTrainingConfig config = optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optInitializer(new NormalInitializer(), Parameter.Type.WEIGHT);
            try (Trainer trainer = model.newTrainer(config)) {
                RecordingLogs.clear();
                trainer.initialize(INPUT);
                assertEquals(1, RecordingLogs.of(MuonAdamW.class.getName()).size(), "classified at initialize");
                assertEquals(List.of("03Linear_weight", "05Linear_weight"),
                        optimizer.assignment().names(OptimizerKind.MUON));
            }
        }
    }

    @Test
    void anOptimizerHandedASecondModel_isRefusedWhenTheTrainerIsCreated() {
        MuonAdamW optimizer = MuonAdamW.builder().build();
        try (Model first = Model.newInstance("first"); Model second = Model.newInstance("second")) {
            first.setBlock(mlp(true));
            second.setBlock(mlp(true));
            try (Trainer trainer = first.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                trainer.initialize(INPUT);
                step(trainer);
            }
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> second.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss())));
            assertEquals("MuonAdamW is bound to the block of another model (01Linear_weight, 01Linear_bias, "
                    + "03Linear_weight, ... 6 in all) and keeps its parameters' state; an optimizer serves one model: "
                    + "build a new MuonAdamW for this trainer", e.getMessage());
            // The same model again, in a new trainer: the optimizer carries on.
            try (Trainer again = first.newTrainer(optimizer.trainingConfig(Loss.softmaxCrossEntropyLoss()))) {
                step(again);
                assertEquals(2, optimizer.stepCount());
            }
        }
    }

    @Test
    void anOptimizerReusedWithoutTheListener_namesTheArray_notDjlsId() {
        MuonAdamW optimizer = MuonAdamW.builder().optBlock(mlp(true)).build();
        try (Model model = Model.newInstance("other")) {
            model.setBlock(mlp(true));
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(optimizer).optDevices(new Device[] {Device.cpu()});
            try (Trainer trainer = model.newTrainer(config)) {
                trainer.initialize(INPUT);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> step(trainer));
                assertTrue(e.getMessage().matches("MuonAdamW was handed an array named '(weight|bias)' of shape "
                        + "\\[\\d+(, \\d+)?], which is not a parameter of the block it is bound to \\(01Linear_weight, "
                        + "01Linear_bias, 03Linear_weight, \\.\\.\\. 6 in all\\): an optimizer serves one model\\. Build "
                        + "a new MuonAdamW for each trainer of another model"), e.getMessage());
                assertFalse(e.getMessage().contains("uid-"), e.getMessage());
            }
        }
    }
}
