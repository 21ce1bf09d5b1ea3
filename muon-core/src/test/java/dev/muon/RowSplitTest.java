package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link RowSplit} in the optimizers: the value's text and equality, the batching plan, the wiring through
 * {@link MuonAdamW} (the same update as a {@link Muon} with the same rule), the assignment table, and checkpoints
 * (the rule is recorded, resumes bit for bit, and a load with another rule is refused with nothing changed).
 */
@ExtendWith(NativeScopePerTest.class)
class RowSplitTest {
    @TempDir
    Path dir;

    /** A fused QKV [12, 4], a per-head W_q [8, 4], an MLP matrix [4, 4]; the head stays on AdamW. */
    static Map<String, Tensor> model(long seed) {
        return model(seed, ScalarType.Float);
    }

    /** {@link #model(long)} in {@code dtype}. */
    static Map<String, Tensor> model(long seed, ScalarType dtype) {
        torch.manual_seed(seed);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("attn.qkv.weight", torch.randn(12, 4).to(dtype).requires_grad_(true));
        named.put("attn.q.weight", torch.randn(8, 4).to(dtype).requires_grad_(true));
        named.put("mlp.weight", torch.randn(4, 4).to(dtype).requires_grad_(true));
        named.put("mlp.bias", torch.randn(4).to(dtype).requires_grad_(true));
        named.put("lm_head.weight", torch.randn(5, 4).to(dtype).requires_grad_(true));
        return named;
    }

    static MuonAdamW.Builder split(Map<String, Tensor> named) {
        return MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(0.02))
                .rowSplit("attn.qkv.weight", RowSplit.splitRows(4, 4, 4))
                .rowSplitWhen((name, t) -> name.endsWith(".q.weight"), RowSplit.perHead(2));
    }

    /** Gradients that depend on the step only. */
    static void train(TrainingOptimizer opt, long step, List<Tensor> params, int steps) {
        for (int k = 0; k < steps; k++) {
            TestModels.setGradients(params, 900 + step + k);
            opt.step();
        }
    }

    @Test
    void toString_andEquality_readAsTheFactoryCall() {
        assertEquals("splitRows(64, 64, 64)", RowSplit.splitRows(64, 64, 64).toString());
        assertEquals("perHead(16)", RowSplit.perHead(16).toString());
        assertEquals(RowSplit.splitRows(2, 3), RowSplit.splitRows(2, 3));
        assertEquals(RowSplit.splitRows(2, 3).hashCode(), RowSplit.splitRows(2, 3).hashCode());
        assertFalse(RowSplit.splitRows(2, 2).equals(RowSplit.perHead(2)));
        assertFalse(RowSplit.splitRows(2, 3).equals(RowSplit.splitRows(3, 2)));
        int[] sizes = {4, 4};
        RowSplit rule = RowSplit.splitRows(sizes);
        sizes[0] = 1;
        assertEquals("splitRows(4, 4)", rule.toString(), "the rule keeps its own copy of the sizes");
        assertArrayEquals(new long[]{3, 3, 3, 3}, RowSplit.perHead(3).blockRows(12, "p"));
    }

    @Test
    void plan_equalBlocksBatch_unequalDoNot_andSplitParametersJoinNoSameShapeBatch() {
        Tensor a = torch.randn(6, 4).requires_grad_(true);
        Tensor b = torch.randn(6, 4).requires_grad_(true);
        Tensor c = torch.randn(6, 4).requires_grad_(true);
        Tensor d = torch.randn(6, 4).requires_grad_(true);
        Muon muon = Muon.builder().addGroup(List.of(a, b, c, d), MuonConfig.defaults())
                .rowSplit(a, RowSplit.perHead(2)).rowSplit(b, RowSplit.splitRows(2, 4)).build();
        assertTrue(muon.rowBlocksOf(a).batched());
        assertArrayEquals(new long[]{2, 2, 2}, muon.rowBlocksOf(a).sizes());
        assertFalse(muon.rowBlocksOf(b).batched());
        assertNull(muon.rowBlocksOf(c));
        // Without the rules all four would form one same-shape batch.
        List<List<Tensor>> batches = muon.sameShapeBatches(0);
        assertEquals(1, batches.size());
        assertEquals(2, batches.get(0).size());
        train(muon, 0, List.of(a, b, c, d), 1);
        assertEquals(2, muon.batchedLastStep());
    }

    /** In the parameter dtypes users train in. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = ScalarType.class, names = {"Float", "BFloat16"})
    void muonAdamW_appliesTheSameUpdateAsMuon_andTheSplitChangesIt(ScalarType dtype) {
        Map<String, Tensor> named = model(1, dtype);
        MuonAdamW opt = split(named).build();
        List<Tensor> muonParams = List.of(named.get("attn.qkv.weight"), named.get("attn.q.weight"),
                named.get("mlp.weight"));
        assertEquals(List.of("attn.qkv.weight", "attn.q.weight", "mlp.weight"),
                opt.assignment().names(OptimizerKind.MUON));

        Map<String, Tensor> same = model(1, dtype);
        List<Tensor> direct = List.of(same.get("attn.qkv.weight"), same.get("attn.q.weight"),
                same.get("mlp.weight"));
        Muon muon = Muon.builder().addGroup(direct, opt.muonConfig())
                .rowSplit(direct.get(0), RowSplit.splitRows(4, 4, 4))
                .rowSplit(direct.get(1), RowSplit.perHead(2)).build();

        Map<String, Tensor> plain = model(1, dtype);
        MuonAdamW whole = MuonAdamW.builder(plain).muon(MuonConfig.defaults().withLr(0.02)).build();

        train(opt, 0, new ArrayList<>(named.values()), 2);
        train(muon, 0, direct, 2);
        train(whole, 0, new ArrayList<>(plain.values()), 2);
        for (int i = 0; i < 3; i++) {
            assertTrue(muonParams.get(i).equal(direct.get(i)), "parameter " + i + " differs from Muon's");
        }
        assertFalse(named.get("attn.qkv.weight").allclose(plain.get("attn.qkv.weight"), 1e-4, 1e-6, false));
        assertFalse(named.get("attn.q.weight").allclose(plain.get("attn.q.weight"), 1e-4, 1e-6, false));
        assertTrue(named.get("mlp.weight").equal(plain.get("mlp.weight")), "an unsplit parameter is unchanged");
        // The momentum buffer is the whole parameter's.
        assertArrayEquals(new long[]{12, 4}, opt.muonState("attn.qkv.weight").orElseThrow().momentum().shape());
        assertEquals(0.02 * Math.sqrt(1.0), opt.muonState("attn.q.weight").orElseThrow().lastScaledLr(),
                "the lr of a 2×4 head block, not of the 8×4 matrix (sqrt(2) under ORIGINAL)");
    }

    @Test
    void assignmentTable_showsTheRule_andTheBlockLr() {
        Map<String, Tensor> named = model(1);
        named.put("attn.gqa.weight", torch.randn(8, 4).requires_grad_(true));
        MuonAdamW opt = split(named).rowSplit("attn.gqa.weight", RowSplit.splitRows(2, 6)).build();
        Map<String, Assignment.Row> rows = new LinkedHashMap<>();
        opt.assignment().rows().forEach(r -> rows.put(r.name(), r));
        assertEquals("hidden matrix; NS per row block splitRows(4, 4, 4)", rows.get("attn.qkv.weight").reason());
        assertEquals(0.02, rows.get("attn.qkv.weight").lr(), 1e-15, "4×4 blocks: ratio 1, not sqrt(3)");
        assertEquals("hidden matrix; NS per row block perHead(2)", rows.get("attn.q.weight").reason());
        assertEquals("hidden matrix; NS per row block splitRows(2, 6), lr per block 0.02000, 0.02449",
                rows.get("attn.gqa.weight").reason());
        assertEquals("hidden matrix", rows.get("mlp.weight").reason());
    }

    @Test
    void checkpoint_recordsTheRule_andResumesBitForBit() {
        Map<String, Tensor> straightModel = model(1);
        MuonAdamW straight = split(straightModel).build();
        train(straight, 0, new ArrayList<>(straightModel.values()), 4);

        Map<String, Tensor> firstModel = model(1);
        MuonAdamW first = split(firstModel).build();
        train(first, 0, new ArrayList<>(firstModel.values()), 2);
        Path file = dir.resolve("split.ckpt");
        first.save(file);
        assertEquals(RowSplit.splitRows(4, 4, 4), dev.muon.state.CheckpointFile.read(file).entry("attn.qkv.weight")
                .orElseThrow().spec().rowSplit());

        Map<String, Tensor> resumedModel = model(2);
        MuonAdamW resumed = split(resumedModel).build();
        resumed.load(file);
        train(resumed, 2, new ArrayList<>(resumedModel.values()), 2);
        for (String name : straightModel.keySet()) {
            assertTrue(straightModel.get(name).equal(resumedModel.get(name)), name + " differs");
        }
    }

    static Stream<Arguments> mismatches() {
        return Stream.of(
                Arguments.of("splitSaved_loadedWithout",
                        (Function<Map<String, Tensor>, MuonAdamW>) m -> split(m).build(),
                        (Function<Map<String, Tensor>, MuonAdamW>) m -> MuonAdamW.builder(m)
                                .rowSplitWhen((name, t) -> name.endsWith(".q.weight"), RowSplit.perHead(2)).build(),
                        "'attn.qkv.weight' row split: this optimizer none, the state splitRows(4, 4, 4); nothing "
                                + "was changed"),
                Arguments.of("splitSaved_loadedWithAnother",
                        (Function<Map<String, Tensor>, MuonAdamW>) m -> split(m).build(),
                        (Function<Map<String, Tensor>, MuonAdamW>) m -> MuonAdamW.builder(m)
                                .rowSplit("attn.qkv.weight", RowSplit.perHead(4))
                                .rowSplit("attn.q.weight", RowSplit.perHead(2)).build(),
                        "'attn.qkv.weight' row split: this optimizer perHead(4), the state splitRows(4, 4, 4); "
                                + "nothing was changed"),
                Arguments.of("noSplitSaved_loadedWithOne",
                        (Function<Map<String, Tensor>, MuonAdamW>) m -> MuonAdamW.builder(m).build(),
                        (Function<Map<String, Tensor>, MuonAdamW>) m -> MuonAdamW.builder(m)
                                .rowSplit("attn.q.weight", RowSplit.perHead(4)).build(),
                        "'attn.q.weight' row split: this optimizer perHead(4), the state none; nothing was "
                                + "changed"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("mismatches")
    void load_otherRule_isRefused_andChangesNothing(String name, Function<Map<String, Tensor>, MuonAdamW> saver,
                                                   Function<Map<String, Tensor>, MuonAdamW> loader,
                                                   String message) {
        Map<String, Tensor> savedModel = model(1);
        MuonAdamW saved = saver.apply(savedModel);
        train(saved, 0, new ArrayList<>(savedModel.values()), 2);
        Path file = dir.resolve(name + ".ckpt");
        saved.save(file);

        Map<String, Tensor> targetModel = model(3);
        MuonAdamW target = loader.apply(targetModel);
        train(target, 0, new ArrayList<>(targetModel.values()), 1);
        List<Tensor> before = new ArrayList<>();
        for (Tensor t : targetModel.values()) {
            before.add(t.clone());
        }
        Tensor momentum = target.muonState("attn.qkv.weight").orElseThrow().momentum();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertTrue(e.getMessage().endsWith(message), e.getMessage());
        int i = 0;
        for (Tensor t : targetModel.values()) {
            assertTrue(before.get(i++).equal(t), "a parameter changed");
        }
        assertTrue(momentum.equal(target.muonState("attn.qkv.weight").orElseThrow().momentum()));
        assertEquals(1, target.stepCount());
    }

    /**
     * A distributed MuonAdamW (a group of one: the agreement, the shard plan and the owned updates all run) with row
     * splits gives the single-process parameters bit for bit.
     */
    @Test
    void distributed_groupOfOne_equalsSingleProcess() throws Exception {
        int port;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        Map<String, Tensor> local = model(1);
        MuonAdamW single = split(local).build();
        train(single, 0, new ArrayList<>(local.values()), 2);
        Map<String, Tensor> sharded = model(1);
        try (dev.muon.distributed.DistributedGroup group = dev.muon.distributed.DistributedGroup.join(
                dev.muon.distributed.GroupConfig.of("127.0.0.1", port, 0, 1))) {
            MuonAdamW opt = split(sharded).distributed(group, dev.muon.distributed.ShardingConfig.defaults()).build();
            train(opt, 0, new ArrayList<>(sharded.values()), 2);
        }
        for (String name : local.keySet()) {
            assertTrue(local.get(name).equal(sharded.get(name)), name + " differs");
        }
    }

    @Test
    void muonCheckpoint_withAnotherRule_isRefused_andChangesNothing() {
        torch.manual_seed(4);
        Tensor w = torch.randn(6, 4).requires_grad_(true);
        Muon saved = Muon.builder().addGroup(List.of(w), MuonConfig.defaults()).rowSplit(w, RowSplit.perHead(3))
                .build();
        train(saved, 0, List.of(w), 1);
        Path file = dir.resolve("muon.ckpt");
        saved.save(file);

        Tensor v = torch.randn(6, 4).requires_grad_(true);
        Muon target = Muon.builder().addGroup(List.of(v), MuonConfig.defaults()).rowSplit(v, RowSplit.perHead(2))
                .build();
        Tensor before = v.clone();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertTrue(e.getMessage().endsWith("'parameter 0 of group 0' row split: this optimizer perHead(2), the state "
                + "perHead(3); nothing was changed"), e.getMessage());
        assertTrue(before.equal(v));

        Tensor u = torch.randn(6, 4).requires_grad_(true);
        Muon same = Muon.builder().addGroup(List.of(u), MuonConfig.defaults()).rowSplit(u, RowSplit.perHead(3))
                .build();
        same.load(file);
        assertTrue(u.equal(w));
    }
}
