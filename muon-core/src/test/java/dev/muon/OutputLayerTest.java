package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.ReLUImpl;
import org.bytedeco.pytorch.SequentialImpl;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static dev.muon.OptimizerKind.ADAMW;
import static dev.muon.OptimizerKind.MUON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The output-layer rule: the last matrix in registration order goes to AdamW unless a head is already known. */
@ExtendWith(NativeScopePerTest.class)
class OutputLayerTest {

    /** A model with the module names and shapes of bytedeco's SimpleMNIST sample: 784 → 64 → 32 → 10. */
    static final class MnistShapedNet {
        final Module module = new Module("net");
        final LinearImpl fc1 = module.register_module("fc1", new LinearImpl(784, 64));
        final LinearImpl fc2 = module.register_module("fc2", new LinearImpl(64, 32));
        final LinearImpl fc3 = module.register_module("fc3", new LinearImpl(32, 10));

        Tensor logits(Tensor x) {
            return fc3.forward(torch.relu(fc2.forward(torch.relu(fc1.forward(x)))));
        }
    }

    static Assignment.Row row(MuonAdamW opt, String name) {
        return opt.assignment().rows().stream().filter(r -> r.name().equals(name)).findFirst().orElseThrow();
    }

    @Test
    void mnistShapedNet_dropIn_putsFc3OnAdamW_andTrains() {
        torch.manual_seed(7);
        MnistShapedNet net = new MnistShapedNet();
        MuonAdamW opt = MuonAdamW.dropIn(net.module.named_parameters(), new AdamWOptions(1e-2));
        assertEquals(List.of("fc1.weight", "fc2.weight"), opt.assignment().names(MUON));
        assertEquals(ADAMW, row(opt, "fc3.weight").optimizer());
        assertEquals("output layer (last matrix)", row(opt, "fc3.weight").reason());
        assertTrue(opt.assignment().toString().contains("output layer (last matrix)"), opt.assignment().toString());

        // Generated data: labels from a fixed random linear teacher, so the task is learnable.
        Tensor x = torch.randn(64, 784);
        Tensor labels = x.matmul(torch.randn(784, 10)).argmax(new org.bytedeco.pytorch.LongOptional(1), false);
        double first = Double.NaN;
        double last = Double.NaN;
        for (int step = 0; step < 30; step++) {
            opt.zero_grad();
            Tensor loss = torch.cross_entropy(net.logits(x), labels);
            loss.backward();
            opt.step();
            last = loss.item_double();
            if (step == 0) {
                first = last;
            }
        }
        assertTrue(last < 0.5 * first, "loss went from " + first + " to " + last);
    }

    @Test
    void sequentialMlp_lastLinearOnAdamW() {
        SequentialImpl mlp = new SequentialImpl();
        mlp.push_back(new LinearImpl(16, 32));
        mlp.push_back(new ReLUImpl());
        mlp.push_back(new LinearImpl(32, 32));
        mlp.push_back(new ReLUImpl());
        mlp.push_back(new LinearImpl(32, 4));
        MuonAdamW opt = MuonAdamW.builder(mlp.named_parameters()).build();
        assertEquals(List.of("0.weight", "2.weight"), opt.assignment().names(MUON));
        assertEquals("output layer (last matrix)", row(opt, "4.weight").reason());
        assertEquals(ADAMW, row(opt, "4.bias").optimizer());
    }

    @Test
    void nanoGptTiedHead_movesNoMatrix() {
        Module gpt = TestModels.gptLike(20, 8, 2);
        Map<String, Tensor> named = new LinkedHashMap<>();
        TestModels.named(gpt).forEach((name, t) -> {
            if (!name.equals("lm_head.weight")) {
                named.put(name, t);
            }
        });
        // nanoGPT registers lm_head last and ties it to wte.
        named.put("lm_head.weight", named.get("wte.weight"));
        MuonAdamW withRule = MuonAdamW.builder(named).build();
        MuonAdamW without = MuonAdamW.builder(named).outputLayerOnAdamW(false).build();
        assertEquals(AssignmentTest.kinds(without.assignment()), AssignmentTest.kinds(withRule.assignment()));
        assertEquals(8, withRule.assignment().names(MUON).size());
        assertTrue(withRule.assignment().rows().stream().noneMatch(r -> r.reason().contains("output layer")));
        assertEquals("tied to 'wte.weight' (counted once)", row(withRule, "lm_head.weight").reason());
    }

    static Map<String, Tensor> params(Object... nameShape) {
        Map<String, Tensor> map = new LinkedHashMap<>();
        for (int i = 0; i < nameShape.length; i += 2) {
            map.put((String) nameShape[i], torch.randn((long[]) nameShape[i + 1]).requires_grad_(true));
        }
        return map;
    }

    static long[] s(long... shape) {
        return shape;
    }

    /**
     * Models and settings where the last matrix stays where the other rules put it: the name of the parameter
     * checked, and the reason expected for it.
     */
    static Stream<Arguments> lastMatrixStays() {
        UnaryOperator<MuonAdamW.Builder> plain = b -> b;
        return Stream.of(
                Arguments.of("head registered before the blocks: the last matrix is hidden",
                        params("head.weight", s(10, 8), "blocks.0.fc.weight", s(8, 8), "blocks.1.fc.weight", s(8, 8)),
                        plain, "blocks.1.fc.weight", MUON, "hidden matrix"),
                Arguments.of("a head named anywhere (classifier) earlier in the order",
                        params("net.classifier.proj.weight", s(10, 8), "fc1.weight", s(8, 8), "fc2.weight", s(8, 8)),
                        plain, "fc2.weight", MUON, "hidden matrix"),
                Arguments.of("a matrix forced to AdamW is the head",
                        params("fc1.weight", s(8, 8), "decoder.weight", s(10, 8), "fc2.weight", s(8, 8)),
                        (UnaryOperator<MuonAdamW.Builder>) b -> b.forceAdamW("decoder.weight"), "fc2.weight", MUON,
                        "hidden matrix"),
                Arguments.of("forceMuon of the last matrix wins",
                        params("fc1.weight", s(8, 8), "fc2.weight", s(8, 8), "fc3.weight", s(10, 8)),
                        (UnaryOperator<MuonAdamW.Builder>) b -> b.forceMuon("fc3.weight"), "fc3.weight", MUON,
                        "forceMuon"),
                Arguments.of("a muonWhen rule decides alone",
                        params("fc1.weight", s(8, 8), "fc2.weight", s(8, 8), "fc3.weight", s(10, 8)),
                        (UnaryOperator<MuonAdamW.Builder>) b -> b.muonWhen(Assignment.defaultMuonRule()),
                        "fc3.weight", MUON, "muonWhen rule"),
                Arguments.of("the switch turns the rule off",
                        params("fc1.weight", s(8, 8), "fc2.weight", s(8, 8), "fc3.weight", s(10, 8)),
                        (UnaryOperator<MuonAdamW.Builder>) b -> b.outputLayerOnAdamW(false), "fc3.weight", MUON,
                        "hidden matrix"),
                Arguments.of("the only matrix on Muon stays there, and the table says why",
                        params("embed.weight", s(10, 8), "proj.weight", s(8, 8), "proj.bias", s(8)),
                        plain, "proj.weight", MUON, "only matrix on Muon (the output-layer rule keeps it)"),
                Arguments.of("a model of conv filters alone has no last matrix",
                        params("conv1.weight", s(4, 3, 3, 3), "conv2.weight", s(8, 4, 3, 3)),
                        plain, "conv2.weight", MUON, "hidden matrix"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("lastMatrixStays")
    void lastMatrix_staysWhereOtherRulesPutIt(String what, Map<String, Tensor> named,
                                              UnaryOperator<MuonAdamW.Builder> settings, String name,
                                              OptimizerKind kind, String reason) {
        MuonAdamW opt = settings.apply(MuonAdamW.builder(named)).build();
        assertEquals(kind, row(opt, name).optimizer(), opt.assignment().toString());
        assertEquals(reason, row(opt, name).reason());
        assertTrue(opt.assignment().rows().stream().noneMatch(r -> r.reason().contains("output layer")),
                opt.assignment().toString());
    }

    @Test
    void convFilterRegisteredLast_isNotTheLastMatrix() {
        MuonAdamW opt = MuonAdamW.builder(params("conv1.weight", s(4, 3, 3, 3), "proj.weight", s(10, 8),
                "conv2.weight", s(8, 4, 3, 3))).build();
        assertEquals(List.of("conv1.weight", "conv2.weight"), opt.assignment().names(MUON));
        assertEquals("output layer (last matrix)", row(opt, "proj.weight").reason());
    }

    @Test
    void frozenLastMatrix_leavesHiddenMatricesOnMuon() {
        Map<String, Tensor> named = params("fc1.weight", s(8, 8), "fc2.weight", s(8, 8), "fc3.weight", s(10, 8));
        named.get("fc3.weight").requires_grad_(false);
        MuonAdamW opt = MuonAdamW.builder(named).build();
        assertEquals(List.of("fc1.weight", "fc2.weight"), opt.assignment().names(MUON));
    }

    static Stream<Arguments> headNames() {
        return Stream.of(
                Arguments.of("out.weight", ADAMW),
                Arguments.of("output.weight", ADAMW),
                Arguments.of("logits.weight", ADAMW),
                Arguments.of("fc_out.weight", ADAMW),
                Arguments.of("proj_out.weight", ADAMW),
                Arguments.of("score.weight", ADAMW),
                Arguments.of("blocks.0.attn.out.weight", MUON),
                Arguments.of("encoder.layer.0.output.dense.weight", MUON),
                Arguments.of("h.0.mlp.fc_out.weight", MUON),
                Arguments.of("transformer_blocks.0.proj_out.weight", MUON),
                Arguments.of("layers.0.score.weight", MUON),
                Arguments.of("out_proj.weight", MUON));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("headNames")
    void headNames_countAtTopLevelOnly(String name, OptimizerKind expected) {
        assertEquals(expected, Assignment.defaultVerdict(name, 2).optimizer());
    }

    @Test
    void checkpointWithOutputLayerOnMuon_isRefusedWithTheSwitchNamed_andLoadsWithTheSwitchOff(@TempDir Path dir) {
        Map<String, Tensor> named = params("fc1.weight", s(8, 8), "fc2.weight", s(8, 8), "fc3.weight", s(10, 8));
        MuonAdamW old = MuonAdamW.builder(named).outputLayerOnAdamW(false).build();
        TestModels.setGradients(named, 3);
        old.step();
        Path file = dir.resolve("old.ckpt");
        old.save(file);
        Tensor before = named.get("fc3.weight").clone();

        MuonAdamW current = MuonAdamW.builder(named).build();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> current.load(file));
        assertTrue(e.getMessage().endsWith("'fc3.weight' optimizer: this optimizer ADAMW, the state MUON ('fc3.weight' "
                + "is on AdamW by the output-layer rule: build with outputLayerOnAdamW(false) to load a state saved "
                + "with it on Muon); nothing was changed"), e.getMessage());
        assertEquals(0, current.stepCount());
        assertTrue(torch.equal(before, named.get("fc3.weight")));

        MuonAdamW compatible = MuonAdamW.builder(named).outputLayerOnAdamW(false).build();
        compatible.load(file);
        assertEquals(1, compatible.stepCount());
    }
}
