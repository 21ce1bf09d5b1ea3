package dev.muon.djl;

import ai.djl.modality.nlp.DefaultVocabulary;
import ai.djl.modality.nlp.embedding.TrainableWordEmbedding;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv1d;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.BatchNorm;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.OptimizerKind;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * muon-core's rules on DJL's own blocks, whose parameters DJL names {@code 01Linear_weight}: hidden matrices and
 * conv filters to Muon; biases, norms, embeddings, heads and the output layer to AdamW; frozen ones left out.
 */
class AssignmentOnDjlBlocksTest {
    private NDManager manager;

    @BeforeEach
    void open() {
        manager = NDManager.newBaseManager();
    }

    @AfterEach
    void close() {
        manager.close();
    }

    private static List<String> rows(ParameterAssignment assignment) {
        return assignment.rows().stream().map(r -> r.name() + " " + r.optimizer() + " " + r.reason()).toList();
    }

    static SequentialBlock mlp() {
        return new SequentialBlock().add(Linear.builder().setUnits(16).build()).add(Activation.reluBlock())
                .add(Linear.builder().setUnits(16).build()).add(Activation.reluBlock())
                .add(Linear.builder().setUnits(4).build());
    }

    @Test
    void mlp_hiddenLayersOnMuon_theLastLayerAndBiasesOnAdamW() {
        SequentialBlock block = mlp();
        block.initialize(manager, DataType.FLOAT32, new Shape(2, 8));
        MuonAdamW opt = MuonAdamW.builder().optBlock(block).build();
        assertEquals(List.of(
                "01Linear_weight MUON hidden matrix",
                "01Linear_bias ADAMW fewer than 2 dims",
                "03Linear_weight MUON hidden matrix",
                "03Linear_bias ADAMW fewer than 2 dims",
                "05Linear_weight ADAMW output layer (last matrix)",
                "05Linear_bias ADAMW fewer than 2 dims"), rows(opt.assignment()));
        String table = opt.assignment().toString();
        assertTrue(table.startsWith("name "), table);
        assertTrue(table.contains("\n01Linear_weight  [16, 8]   float32   muon    0.0008000            512  "
                + "hidden matrix\n"), table);
        // The summary, then the line saying which products run Newton-Schulz (muon-core's native ones, at any size
        // where they load; DJL's where they do not).
        assertTrue(table.contains("\n2 on Muon, 4 on AdamW; state 2336 bytes = 0.603 x AdamW alone (3872)\n"
                + "Newton-Schulz: " + (dev.muon.orthogonalize.BufferKernels.isAvailable()
                ? "muon-core's native float32 kernels" : "DJL's NDArray products (")), table);
    }

    @Test
    void embeddingConvAndNorm_byDjlsBlockNames_andFrozenStatisticsLeftOut() {
        TrainableWordEmbedding embedding = TrainableWordEmbedding.builder()
                .setVocabulary(new DefaultVocabulary(List.of("a", "b", "c"))).setEmbeddingSize(8).build();
        Block conv = Conv2d.builder().setKernelShape(new Shape(3, 3)).setFilters(4).build();
        Block norm = BatchNorm.builder().build();
        Block head = Linear.builder().setUnits(10).build();
        embedding.initialize(manager, DataType.FLOAT32, new Shape(2));
        conv.initialize(manager, DataType.FLOAT32, new Shape(1, 3, 8, 8));
        norm.initialize(manager, DataType.FLOAT32, new Shape(1, 4, 6, 6));
        head.initialize(manager, DataType.FLOAT32, new Shape(1, 8));
        SequentialBlock block = new SequentialBlock().add(embedding).add(conv).add(norm).add(head);
        MuonAdamW opt = MuonAdamW.builder().optBlock(block).build();
        assertEquals(List.of(
                "01TrainableWordEmbedding_embedding ADAMW embedding or head ('TrainableWordEmbedding')",
                "02Conv2d_weight MUON hidden matrix",
                "02Conv2d_bias ADAMW fewer than 2 dims",
                "03BatchNorm_gamma ADAMW fewer than 2 dims",
                "03BatchNorm_beta ADAMW fewer than 2 dims",
                "04Linear_weight ADAMW output layer (last matrix)",
                "04Linear_bias ADAMW fewer than 2 dims"), rows(opt.assignment()));
        assertEquals(List.of("03BatchNorm_runningMean", "03BatchNorm_runningVar"), opt.assignment().frozen());
        double flattenedRatio = opt.assignment().rows().get(1).lr() / opt.muonConfig().lr();
        assertEquals(0.2 * Math.sqrt(27), flattenedRatio, 1e-12, "the conv filter's lr uses [4, 27]");
    }

    /** DJL's smallest classifier, batchFlatten + Linear(10): its one matrix stays on Muon, and the table says why. */
    @Test
    void oneMatrixModel_keepsItsMatrixOnMuon_andSaysWhy() {
        SequentialBlock block = new SequentialBlock().add(Blocks.batchFlattenBlock(28 * 28))
                .add(Linear.builder().setUnits(10).build());
        block.initialize(manager, DataType.FLOAT32, new Shape(1, 28 * 28));
        MuonAdamW opt = MuonAdamW.builder().optBlock(block).build();
        assertEquals(List.of(
                "02Linear_weight MUON only matrix on Muon (the output-layer rule keeps it)",
                "02Linear_bias ADAMW fewer than 2 dims"), rows(opt.assignment()));
    }

    /** A Conv1d layer of six filters of width 3 over 4 channels of 10, then a linear layer: initialized. */
    private SequentialBlock conv1dNet() {
        SequentialBlock block = new SequentialBlock()
                .add(Conv1d.builder().setKernelShape(new Shape(3)).setFilters(6).build())
                .add(Blocks.batchFlattenBlock()).add(Linear.builder().setUnits(2).build());
        block.initialize(manager, DataType.FLOAT32, new Shape(1, 4, 10));
        return block;
    }

    /** A Conv1d filter [out, in, k] is a conv filter as a Conv2d one is: flattened to [out, in·k] on Muon. */
    @Test
    void conv1dFilter_isFlattenedLikeA2dOne() {
        SequentialBlock block = conv1dNet();
        MuonAdamW opt = MuonAdamW.builder().optBlock(block).build();
        assertEquals("01Conv1d_weight MUON hidden matrix", rows(opt.assignment()).get(0));
        double ratio = opt.assignment().rows().get(0).lr() / opt.muonConfig().lr();
        assertEquals(0.2 * Math.sqrt(12), ratio, 1e-12, "the filter's lr uses [6, 4·3]");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MuonAdamW.builder().optBlock(block).optMuon(MuonConfig.defaults()).build());
        assertEquals("Muon only supports 2-D parameters; parameter '01Conv1d_weight' has shape [6, 4, 3]. To flatten "
                + "a 3-D conv filter to [6, 12], use MuonConfig.withConvWeights(ConvWeights.FLATTEN) (sent to Muon "
                + "by the default rule as a hidden matrix; optForceAdamW(\"01Conv1d_weight\") keeps it on AdamW)",
                e.getMessage());
    }

    /**
     * A Conv1d filter flattened for Muon keeps one NorMuon entry per filter, which checkpoints (reading a 3-D parameter
     * as a stack) cannot describe: refused when the optimizer is built, in both optimizers, not when the run first
     * saves; a Conv2d filter's, which they describe, builds.
     */
    @Test
    void conv1dFilter_withNorMuon_isRefusedAtBuild_namingIt() {
        SequentialBlock block = conv1dNet();
        MuonConfig norMuon = MuonConfig.dropIn(1e-2, 0.01).withNorMuon(NorMuonConfig.defaults());
        String message = "parameter '01Conv1d_weight' of shape [6, 4, 3], taken by Muon as a 6 x 12 matrix, would "
                + "keep its NorMuon second moment of shape [6], which checkpoints cannot describe (they read a "
                + "parameter of 3 dims as one of shape [6, 4]); send the parameter to AdamW, or change norMuon = on";
        assertEquals(message, assertThrows(IllegalArgumentException.class,
                () -> MuonAdamW.builder().optBlock(block).optMuon(norMuon).build()).getMessage());
        SequentialBlock convOnly = new SequentialBlock()
                .add(Conv1d.builder().setKernelShape(new Shape(3)).setFilters(6).optBias(false).build());
        convOnly.initialize(manager, DataType.FLOAT32, new Shape(1, 4, 10));
        assertEquals(message, assertThrows(IllegalArgumentException.class,
                () -> Muon.builder().optBlock(convOnly).optConfig(norMuon).build()).getMessage());

        SequentialBlock conv2d = new SequentialBlock()
                .add(ai.djl.nn.convolutional.Conv2d.builder().setKernelShape(new Shape(3, 3)).setFilters(6).build())
                .add(Blocks.batchFlattenBlock()).add(Linear.builder().setUnits(2).build());
        conv2d.initialize(manager, DataType.FLOAT32, new Shape(1, 4, 8, 8));
        assertEquals("01Conv2d_weight MUON hidden matrix",
                rows(MuonAdamW.builder().optBlock(conv2d).optMuon(norMuon).build().assignment()).get(0));
    }

    /** A model with many frozen statistics lists them wrapped, no line longer than the table's width. */
    @Test
    void manyFrozenParameters_areListedOnWrappedLines() {
        SequentialBlock block = new SequentialBlock();
        for (int i = 0; i < 30; i++) {
            block.add(Linear.builder().setUnits(8).build()).add(BatchNorm.builder().build());
        }
        block.initialize(manager, DataType.FLOAT32, new Shape(2, 8));
        String table = MuonAdamW.builder().optBlock(block).build().assignment().toString();
        // The list alone: the line on which products run Newton-Schulz follows it.
        String leftOut = table.substring(table.indexOf("left out"), table.indexOf("Newton-Schulz: "));
        assertTrue(table.lines().allMatch(line -> line.length() <= 100), table);
        assertTrue(leftOut.lines().count() > 5, leftOut);
        assertTrue(leftOut.lines().allMatch(line -> line.length() <= 100), leftOut);
        assertTrue(leftOut.startsWith("left out (requires grad false): 02BatchNorm_runningMean, "), leftOut);
        assertEquals(60, leftOut.split(",").length, leftOut);
    }

    @Test
    void aChildNamedHead_isAHeadByName_andTheLastMatrixStaysHidden() {
        ParamBlock model = new ParamBlock();
        Block hidden = Linear.builder().setUnits(8).build();
        Block head = Linear.builder().setUnits(3).build();
        Block last = Linear.builder().setUnits(8).build();
        hidden.initialize(manager, DataType.FLOAT32, new Shape(1, 8));
        head.initialize(manager, DataType.FLOAT32, new Shape(1, 8));
        last.initialize(manager, DataType.FLOAT32, new Shape(1, 8));
        model.child("body", hidden).child("head", head).child("proj", last);
        MuonAdamW opt = MuonAdamW.builder().optBlock(model).build();
        assertEquals(List.of(
                "01body_weight MUON hidden matrix",
                "01body_bias ADAMW fewer than 2 dims",
                "02head_weight ADAMW output head ('head')",
                "02head_bias ADAMW fewer than 2 dims",
                "03proj_weight MUON hidden matrix",
                "03proj_bias ADAMW fewer than 2 dims"), rows(opt.assignment()));
    }

    @Test
    void overridesAndACustomRule_winOverTheDefaultRule() {
        SequentialBlock block = mlp();
        block.initialize(manager, DataType.FLOAT32, new Shape(2, 8));
        MuonAdamW forced = MuonAdamW.builder().optBlock(block).optForceAdamW("01Linear_weight")
                .optForceMuon("05Linear_weight").build();
        assertEquals(List.of("03Linear_weight", "05Linear_weight"), forced.assignment().names(OptimizerKind.MUON));
        assertEquals("optForceAdamW", forced.assignment().rows().get(0).reason());
        assertEquals("optForceMuon", forced.assignment().rows().get(4).reason());

        MuonAdamW custom = MuonAdamW.builder().optBlock(block)
                .optMuonWhen((name, shape) -> shape.dimension() == 2 && !name.startsWith("03")).build();
        assertEquals(List.of("01Linear_weight", "05Linear_weight"), custom.assignment().names(OptimizerKind.MUON));
        assertTrue(custom.assignment().rows().stream().allMatch(r -> r.reason().equals("optMuonWhen rule")));

        MuonAdamW noOutputRule = MuonAdamW.builder().optBlock(block).optOutputLayerOnAdamW(false).build();
        assertEquals(List.of("01Linear_weight", "03Linear_weight", "05Linear_weight"),
                noOutputRule.assignment().names(OptimizerKind.MUON));
    }

    @Test
    void aSharedBlock_isCountedOnce_underItsFirstName_onAdamW() {
        ParamBlock shared = new ParamBlock().param("weight", manager.ones(new Shape(4, 4)));
        ParamBlock model = new ParamBlock().child("a", shared).child("b", shared)
                .param("w", manager.ones(new Shape(4, 4)));
        MuonAdamW opt = MuonAdamW.builder().optBlock(model).build();
        assertEquals(List.of(
                "w MUON hidden matrix",
                "01a_weight ADAMW tied weights",
                "02b_weight ADAMW tied to '01a_weight' (counted once)"), rows(opt.assignment()));
        assertEquals(List.of("01a_weight"), opt.assignment().names(OptimizerKind.ADAMW));
    }
}
