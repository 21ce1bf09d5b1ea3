package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.MemoryFormatOptional;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static dev.muon.OptimizerKind.ADAMW;
import static dev.muon.OptimizerKind.MUON;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which parameter goes where: real libtorch models, the default name rules, overrides, tying, state bytes. */
@ExtendWith(NativeScopePerTest.class)
class AssignmentTest {
    static Map<String, OptimizerKind> kinds(Assignment a) {
        Map<String, OptimizerKind> map = new LinkedHashMap<>();
        a.rows().forEach(r -> map.put(r.name(), r.optimizer()));
        return map;
    }

    @Test
    void gptLike_hiddenMatricesOnMuon_restOnAdamW() {
        Module gpt = TestModels.gptLike(50, 8, 2);
        MuonAdamW opt = MuonAdamW.builder(gpt.named_parameters()).build();
        Map<String, OptimizerKind> expected = new LinkedHashMap<>();
        expected.put("wte.weight", ADAMW);
        expected.put("wpe.weight", ADAMW);
        for (int i = 0; i < 2; i++) {
            String b = "h." + i + ".";
            // In module order: the layer norms' gains and every bias on AdamW, the four linear weights on Muon.
            for (String layer : List.of("ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj")) {
                expected.put(b + layer + ".weight", layer.startsWith("ln_") ? ADAMW : MUON);
                expected.put(b + layer + ".bias", ADAMW);
            }
        }
        expected.put("ln_f.weight", ADAMW);
        expected.put("ln_f.bias", ADAMW);
        expected.put("lm_head.weight", ADAMW);
        assertEquals(expected, kinds(opt.assignment()));
        String table = opt.assignment().toString();
        assertTrue(table.contains("8 on Muon, 21 on AdamW"), table);
        assertTrue(table.contains("embedding or head ('wte')"), table);
    }

    @Test
    void cnnLike_convFiltersOnMuon_normsAndClassifierOnAdamW() {
        Module cnn = TestModels.cnnLike();
        MuonAdamW opt = MuonAdamW.builder(cnn.named_parameters()).build();
        Map<String, OptimizerKind> expected = new LinkedHashMap<>();
        expected.put("conv1.weight", MUON);
        expected.put("conv1.bias", ADAMW);
        expected.put("bn1.weight", ADAMW);
        expected.put("bn1.bias", ADAMW);
        expected.put("conv2.weight", MUON);
        expected.put("conv2.bias", ADAMW);
        expected.put("bn2.weight", ADAMW);
        expected.put("bn2.bias", ADAMW);
        expected.put("fc.weight", ADAMW);
        expected.put("fc.bias", ADAMW);
        assertEquals(expected, kinds(opt.assignment()));
        // conv1 is [8, 3, 3, 3], flattened to 8 x 27: ratio sqrt(max(1, 8/27)) = 1 under ORIGINAL.
        Assignment.Row conv1 = opt.assignment().rows().get(0);
        assertEquals(1e-3, conv1.lr(), 1e-15);
        TestModels.setGradients(TestModels.named(cnn), 1);
        opt.step();
        assertEquals(1, opt.stepCount());
    }

    static Stream<Arguments> defaultRuleNames() {
        return Stream.of(
                Arguments.of("model.embed_tokens.weight", 2, ADAMW),
                Arguments.of("tok_embeddings.weight", 2, ADAMW),
                Arguments.of("bert.embeddings.word_embeddings.weight", 2, ADAMW),
                Arguments.of("transformer.wte.weight", 2, ADAMW),
                Arguments.of("transformer.wpe.weight", 2, ADAMW),
                Arguments.of("tok_emb.weight", 2, ADAMW),
                Arguments.of("lm_head.weight", 2, ADAMW),
                Arguments.of("model.lm_head.weight", 2, ADAMW),
                Arguments.of("output.weight", 2, ADAMW),
                Arguments.of("classifier.weight", 2, ADAMW),
                Arguments.of("head.weight", 2, ADAMW),
                Arguments.of("fc.weight", 2, ADAMW),
                Arguments.of("layers.0.attention.wq.weight", 2, MUON),
                Arguments.of("layers.0.feed_forward.w1.weight", 2, MUON),
                Arguments.of("encoder.layer.0.attention.output.dense.weight", 2, MUON),
                Arguments.of("blocks.3.attn.heads_proj.weight", 2, MUON),
                Arguments.of("fc1.weight", 2, MUON),
                Arguments.of("features.0.weight", 4, MUON),
                Arguments.of("layers.0.norm.weight", 1, ADAMW),
                Arguments.of("layers.0.mlp.fc1.bias", 1, ADAMW),
                Arguments.of("scale", 0, ADAMW),
                Arguments.of("experts.w1", 3, ADAMW));
    }

    @ParameterizedTest(name = "{0} ({1}-D) -> {2}")
    @MethodSource("defaultRuleNames")
    void defaultRule_classifiesByDimsAndName(String name, int dims, OptimizerKind expected) {
        assertEquals(expected, Assignment.defaultVerdict(name, dims).optimizer());
    }

    @Test
    void frozenParameters_areLeftOutAndListed() {
        Module gpt = TestModels.gptLike(20, 4, 1);
        Map<String, Tensor> named = TestModels.named(gpt);
        named.get("wpe.weight").requires_grad_(false);
        MuonAdamW opt = MuonAdamW.builder(named).build();
        assertEquals(List.of("wpe.weight"), opt.assignment().frozen());
        assertTrue(opt.assignment().rows().stream().noneMatch(r -> r.name().equals("wpe.weight")));
        assertTrue(opt.assignment().toString().contains("left out (requires_grad == false): wpe.weight"));
    }

    @Test
    void tiedWeights_countOnce_onAdamW() {
        Module gpt = TestModels.gptLike(20, 4, 1);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("transformer.tok.weight", TestModels.named(gpt).get("wte.weight"));
        named.putAll(TestModels.named(gpt));
        named.put("decoder.weight", named.get("transformer.tok.weight"));
        MuonAdamW opt = MuonAdamW.builder(named).build();
        Map<String, OptimizerKind> kinds = kinds(opt.assignment());
        assertEquals(ADAMW, kinds.get("transformer.tok.weight"), "tied weights go to AdamW whatever their names");
        Assignment.Row alias = opt.assignment().rows().stream().filter(r -> r.name().equals("decoder.weight"))
                .findFirst().orElseThrow();
        assertEquals(0, alias.stateBytes());
        assertEquals("tied to 'transformer.tok.weight' (counted once)", alias.reason());
        assertEquals(List.of("transformer.tok.weight"), opt.assignment().names(ADAMW).stream()
                .filter(n -> n.contains("tok") || n.contains("decoder")).collect(Collectors.toList()));
    }

    @Test
    void overrides_predicateAndNameLists() {
        Module gpt = TestModels.gptLike(20, 4, 1);
        MuonAdamW opt = MuonAdamW.builder(gpt.named_parameters())
                .muonWhen(Assignment.defaultMuonRule().and((name, t) -> !name.contains("c_proj")))
                .forceMuon("lm_head.weight")
                .forceAdamW("h.0.mlp.c_fc.weight")
                .build();
        Map<String, OptimizerKind> kinds = kinds(opt.assignment());
        assertEquals(MUON, kinds.get("h.0.attn.c_attn.weight"));
        assertEquals(ADAMW, kinds.get("h.0.attn.c_proj.weight"));
        assertEquals(ADAMW, kinds.get("h.0.mlp.c_fc.weight"));
        assertEquals(MUON, kinds.get("lm_head.weight"));
    }

    @Test
    void emptyMuonGroup_isAccepted_whenOptedIn() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("bias", torch.zeros(3).requires_grad_(true));
        MuonAdamW opt = MuonAdamW.builder(named).allowEmptyMuon(true).build();
        named.get("bias").mutable_grad().put(torch.ones(3));
        opt.step();
        assertTrue(opt.assignment().names(MUON).isEmpty());
    }

    @Test
    void stateBytes_matchWhatTheOptimizersHold() {
        Module gpt = TestModels.gptLike(20, 8, 1);
        Map<String, Tensor> named = TestModels.named(gpt);
        MuonAdamW opt = MuonAdamW.builder(named).build();
        TestModels.setGradients(named, 3);
        opt.step();
        for (Assignment.Row row : opt.assignment().rows()) {
            Tensor p = named.get(row.name());
            long held;
            if (row.optimizer() == MUON) {
                held = opt.muonState(row.name()).orElseThrow().momentum().nbytes();
            } else {
                AdamWState m = opt.adamWState(row.name()).orElseThrow();
                held = m.expAvg().nbytes() + m.expAvgSq().nbytes();
            }
            assertEquals(held, row.stateBytes(), row.name());
        }
    }

    /**
     * GPT-2 small (d = 768, 12 layers, vocabulary 50257, context 1024, lm_head tied to wte), built on the meta
     * device so that no memory is allocated. The ratio follows from the shapes: 84,934,656 matrix entries on Muon
     * (one buffer), 39,505,152 on AdamW (two moments), against two moments for all 124,439,808.
     */
    @Test
    void gpt2Small_stateBytesRatio() {
        for (boolean tied : new boolean[]{true, false}) {
            MuonAdamW opt = MuonAdamW.builder(gpt2Small(tied)).build();
            Assignment a = opt.assignment();
            double ratio = (double) a.stateBytes() / a.adamWOnlyStateBytes();
            System.out.printf("GPT-2 small (%s): state %d bytes, AdamW alone %d bytes, ratio %.4f%n",
                    tied ? "tied" : "untied", a.stateBytes(), a.adamWOnlyStateBytes(), ratio);
            long total = tied ? 124_439_808L : 124_439_808L + 50257L * 768;
            long muon = 84_934_656L;
            assertEquals(2 * total * 4, a.adamWOnlyStateBytes());
            assertEquals((muon + 2 * (total - muon)) * 4, a.stateBytes());
        }
    }

    /**
     * The issue asks for at most 0.52 of AdamW's state; with the embeddings and the head on AdamW, as the issue
     * also requires, GPT-2 small cannot go below 0.659 (see docs/benchmarks.md). Only forcing them onto Muon, which
     * the default rules refuse on purpose, reaches the target: this pins down both numbers.
     */
    @Test
    void gpt2Small_ratioBelow052_needsTheEmbeddingsOnMuon() {
        Map<String, Tensor> named = gpt2Small(false);
        Assignment byDefault = MuonAdamW.builder(named).build().assignment();
        assertTrue((double) byDefault.stateBytes() / byDefault.adamWOnlyStateBytes() > 0.52);
        Assignment forced = MuonAdamW.builder(named).forceMuon("wte.weight", "wpe.weight", "lm_head.weight")
                .build().assignment();
        double ratio = (double) forced.stateBytes() / forced.adamWOnlyStateBytes();
        System.out.printf("GPT-2 small (untied, embeddings and head forced to Muon): ratio %.4f%n", ratio);
        assertTrue(ratio <= 0.52, "ratio " + ratio);
    }

    static Map<String, Tensor> gpt2Small(boolean tied) {
        int d = 768;
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("wte.weight", meta(50257, d));
        named.put("wpe.weight", meta(1024, d));
        for (int i = 0; i < 12; i++) {
            String b = "h." + i + ".";
            named.put(b + "ln_1.weight", meta(d));
            named.put(b + "ln_1.bias", meta(d));
            named.put(b + "attn.c_attn.weight", meta(3 * d, d));
            named.put(b + "attn.c_attn.bias", meta(3 * d));
            named.put(b + "attn.c_proj.weight", meta(d, d));
            named.put(b + "attn.c_proj.bias", meta(d));
            named.put(b + "ln_2.weight", meta(d));
            named.put(b + "ln_2.bias", meta(d));
            named.put(b + "mlp.c_fc.weight", meta(4 * d, d));
            named.put(b + "mlp.c_fc.bias", meta(4 * d));
            named.put(b + "mlp.c_proj.weight", meta(d, 4 * d));
            named.put(b + "mlp.c_proj.bias", meta(d));
        }
        named.put("ln_f.weight", meta(d));
        named.put("ln_f.bias", meta(d));
        named.put("lm_head.weight", tied ? named.get("wte.weight") : meta(50257, d));
        return named;
    }

    static Tensor meta(long... shape) {
        return torch.empty(shape, new TensorOptions().device(new DeviceOptional(new Device("meta"))),
                new MemoryFormatOptional()).requires_grad_(true);
    }
}
