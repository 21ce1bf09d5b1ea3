package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import dev.muon.distributed.ShardingConfig;
import dev.muon.golden.Float64Update;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The combination table of {@code docs/api.md}, tested cell by cell: for every pair of features, an optimizer with
 * both runs three steps and each parameter's displacement matches a float64 reference written from the
 * formulas on plain Java arrays ({@link Float64Update}) (momentum, Nesterov, PyTorch's Newton–Schulz, NorMuon per
 * row block, the lr of each block's shape, cautious or plain decay, Hyperball's sphere over the whole parameter,
 * bfloat16 momentum storage, QK-Clip's rescaling after the step, a skipped step for a non-finite gradient).
 * Relative error ≤ 1e-10 with float64 Newton–Schulz; with bfloat16 Newton–Schulz, the golden suite's bfloat16
 * bound on an update (5e-2, as many steps). The pairs not run are refused, each for a stated reason
 * ({@link #refusedPair}): Gram with symmetric, and Hyperball with cautious decay (tested as a refusal).
 */
@ExtendWith(NativeScopePerTest.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CombinationTableTest {
    /** The features of the table, each a change to the config, the parameters or the optimizer. */
    enum Feature {
        NORMUON, ROW_SPLIT, CONV, STACKED, BATCHING, SHARDED, QK_CLIP, NON_FINITE, BF16_NS, GRAM, SYMMETRIC,
        CAUTIOUS_DECAY, BF16_MOMENTUM, HYPERBALL
    }

    /**
     * The pairs that are refused, each for a stated reason: two values of one setting ({@code nsAlgorithm}); and
     * Hyperball with cautious weight decay, a weight decay, which the sphere replaces (it needs weight decay 0,
     * with which cautious decay would change nothing).
     */
    private static boolean refusedPair(Feature a, Feature b) {
        Set<Feature> f = EnumSet.of(a, b);
        return f.equals(EnumSet.of(Feature.GRAM, Feature.SYMMETRIC))
                || f.equals(EnumSet.of(Feature.HYPERBALL, Feature.CAUTIOUS_DECAY));
    }

    private static final int STEPS = 3;
    private static final double TAU = 100;
    private DistributedGroup single;

    @BeforeAll
    void join() throws IOException {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        single = DistributedGroup.join(GroupConfig.of("127.0.0.1", port, 0, 1).withTimeout(Duration.ofSeconds(20)));
    }

    @AfterAll
    void leave() {
        single.close();
    }

    static Stream<Arguments> pairs() {
        List<Arguments> pairs = new ArrayList<>();
        Feature[] all = Feature.values();
        for (int a = 0; a < all.length; a++) {
            for (int b = a + 1; b < all.length; b++) {
                if (!refusedPair(all[a], all[b])) {
                    pairs.add(Arguments.of(all[a], all[b]));
                }
            }
        }
        return pairs.stream();
    }

    @ParameterizedTest(name = "{0} with {1}")
    @MethodSource("pairs")
    void pair_matchesFloat64Reference(Feature a, Feature b) {
        Set<Feature> f = EnumSet.of(a, b);
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1).withMomentum(0.9)
                .withNsPrecision(f.contains(Feature.BF16_NS) ? NsPrecision.BFLOAT16 : NsPrecision.FLOAT64)
                .withBatchSameShape(f.contains(Feature.BATCHING))
                .withConvWeights(ConvWeights.FLATTEN).withStackedWeights(StackedWeights.BATCH)
                .withNsAlgorithm(f.contains(Feature.GRAM) ? NsAlgorithm.GRAM
                        : f.contains(Feature.SYMMETRIC) ? NsAlgorithm.SYMMETRIC : NsAlgorithm.AUTO)
                .withCautiousWeightDecay(f.contains(Feature.CAUTIOUS_DECAY))
                .withMomentumPrecision(f.contains(Feature.BF16_MOMENTUM) ? MomentumPrecision.BFLOAT16
                        : MomentumPrecision.PARAMETER);
        if (f.contains(Feature.NORMUON)) {
            config = config.withNorMuon(0.9, 1e-3);
        }
        if (f.contains(Feature.HYPERBALL)) {
            config = config.withWeightDecay(0).withHyperball(HyperballConfig.defaults());
        }
        Random random = new Random(31);
        Map<String, long[]> shapes = new LinkedHashMap<>();
        Map<String, RowSplit> splits = new LinkedHashMap<>();
        shapes.put("layer.a.weight", new long[]{6, 4});
        shapes.put("layer.b.weight", new long[]{5, 7});
        if (f.contains(Feature.ROW_SPLIT)) {
            shapes.put("attn.qkv.weight", new long[]{12, 4});
            splits.put("attn.qkv.weight", RowSplit.splitRows(4, 4, 4));
        }
        if (f.contains(Feature.CONV)) {
            shapes.put("conv.weight", new long[]{4, 2, 3, 3});
            if (f.contains(Feature.ROW_SPLIT)) {
                splits.put("conv.weight", RowSplit.splitRows(1, 3));
            }
        }
        if (f.contains(Feature.STACKED)) {
            shapes.put("experts.weight", new long[]{3, 4, 5});
            if (f.contains(Feature.ROW_SPLIT)) {
                splits.put("experts.weight", RowSplit.perHead(2));
                // Unequal blocks on a stack: cut alike in each matrix, one block after another.
                shapes.put("experts.unequal.weight", new long[]{2, 6, 5});
                splits.put("experts.unequal.weight", RowSplit.splitRows(2, 4));
            }
        }
        if (f.contains(Feature.BATCHING)) {
            for (int k = 0; k < 3; k++) {
                shapes.put("s." + k + ".weight", new long[]{4, 4});
            }
        }
        boolean fusedClip = f.contains(Feature.QK_CLIP) && f.contains(Feature.ROW_SPLIT);
        if (f.contains(Feature.QK_CLIP) && !fusedClip) {
            shapes.put("attn.q.weight", new long[]{8, 6});
            shapes.put("attn.k.weight", new long[]{8, 6});
        }

        Map<String, Tensor> named = new LinkedHashMap<>();
        Map<String, Float64Update> refs = new LinkedHashMap<>();
        for (Map.Entry<String, long[]> e : shapes.entrySet()) {
            double[] values = Float64Update.gaussian(random, e.getValue());
            named.put(e.getKey(), Tensors.of(values, e.getValue(), ScalarType.Double).requires_grad_(true));
            refs.put(e.getKey(), reference(values, e.getValue(), splits.get(e.getKey()), config));
        }
        Map<String, Tensor> initial = new LinkedHashMap<>();
        named.forEach((k, v) -> initial.put(k, v.detach().clone()));
        QkClip clip = null;
        double[] logits = fusedClip ? new double[]{200} : new double[]{150, 80};
        if (f.contains(Feature.QK_CLIP)) {
            QkClip.Builder builder = QkClip.builder(named).tau(TAU);
            clip = fusedClip ? builder.fusedLayer("attn", "attn.qkv.weight", QkClip.Heads.of(1, 4), 0, 4).build()
                    : builder.layer("attn", "attn.q.weight", "attn.k.weight", QkClip.Heads.of(2, 4)).build();
        }

        TrainingOptimizer optimizer;
        Muon muon = null;
        if (f.contains(Feature.NON_FINITE)) {
            MuonAdamW.Builder builder = MuonAdamW.builder(named).muon(config).muonWhen((n, t) -> true)
                    .outputLayerOnAdamW(false).nonFinitePolicy(NonFinitePolicy.SKIP);
            splits.forEach(builder::rowSplit);
            if (clip != null) {
                builder.qkClip(clip);
            }
            if (f.contains(Feature.SHARDED)) {
                builder.distributed(single, ShardingConfig.defaults());
            }
            optimizer = builder.build();
        } else {
            Muon.Builder builder = Muon.builder().addGroup(named.values(), config);
            splits.forEach((name, split) -> builder.rowSplit(named.get(name), split));
            if (clip != null) {
                builder.qkClip(clip);
            }
            if (f.contains(Feature.SHARDED)) {
                builder.distributed(single, ShardingConfig.defaults());
            }
            muon = builder.build();
            optimizer = muon;
        }

        for (int step = 1; step <= STEPS; step++) {
            boolean poisoned = f.contains(Feature.NON_FINITE) && step == 2;
            for (Map.Entry<String, Tensor> e : named.entrySet()) {
                double[] g = Float64Update.gaussian(random, shapes.get(e.getKey()));
                if (poisoned && e.getKey().equals("layer.a.weight")) {
                    g[0] = Double.NaN;
                }
                e.getValue().mutable_grad().put(Tensors.of(g, shapes.get(e.getKey()), ScalarType.Double));
                if (!poisoned) {
                    refs.get(e.getKey()).step(g);
                }
            }
            if (clip != null) {
                clip.report("attn", Tensors.of(logits, new long[]{logits.length}, ScalarType.Double));
                if (!poisoned) {
                    clipReference(refs, fusedClip, logits);
                }
            }
            optimizer.step();
            if (muon != null && f.contains(Feature.BATCHING) && config.nsAlgorithm() == NsAlgorithm.AUTO) {
                assertTrue(muon.batchedLastStep() > 0, "the same-shape matrices did not batch");
            }
        }
        double tolerance = f.contains(Feature.BF16_NS) ? 5e-2 * STEPS : 1e-10;
        for (Map.Entry<String, Tensor> e : named.entrySet()) {
            double[] moved = Tensors.values(e.getValue().sub(initial.get(e.getKey())));
            double[] expected = refs.get(e.getKey()).p.clone();
            double[] start = Tensors.values(initial.get(e.getKey()));
            for (int i = 0; i < expected.length; i++) {
                expected[i] -= start[i];
            }
            double error = Tensors.relativeError(moved, expected);
            assertTrue(error <= tolerance, a + " with " + b + ": " + e.getKey() + " moved with relative error "
                    + error + " (bound " + tolerance + ")");
        }
    }

    /** QK-Clip after the step: each head over τ scaled by γ = τ/S, its query rows by γ^α and key rows by γ^(1−α). */
    private static void clipReference(Map<String, Float64Update> refs, boolean fused, double[] logits) {
        double alpha = QkClip.DEFAULT_ALPHA;
        for (int h = 0; h < logits.length; h++) {
            double gamma = logits[h] > TAU ? TAU / logits[h] : 1;
            if (fused) {
                refs.get("attn.qkv.weight").scaleRows(h * 4, 4, Math.pow(gamma, alpha));
                refs.get("attn.qkv.weight").scaleRows(4 + h * 4, 4, Math.pow(gamma, 1 - alpha));
            } else {
                refs.get("attn.q.weight").scaleRows(h * 4, 4, Math.pow(gamma, alpha));
                refs.get("attn.k.weight").scaleRows(h * 4, 4, Math.pow(gamma, 1 - alpha));
            }
        }
    }

    /** The reference of one parameter: a stack's matrices, or one matrix (a conv filter flattened). */
    private static Float64Update reference(double[] values, long[] shape, RowSplit split, MuonConfig c) {
        int k = shape.length == 3 ? (int) shape[0] : 1;
        int m = (int) shape[shape.length == 3 ? 1 : 0];
        int[] blocks = null;
        if (split != null && split.headDim() > 0) {
            blocks = new int[m / split.headDim()];
            Arrays.fill(blocks, split.headDim());
        } else if (split != null) {
            blocks = split.blockSizes();
        }
        return new Float64Update(values, k, m, blocks, c);
    }

    @org.junit.jupiter.api.Test
    void hyperballWithCautiousDecay_isRefused_becauseTheSphereReplacesWeightDecay() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> MuonConfig.defaults().withWeightDecay(0).withCautiousWeightDecay(true)
                        .withHyperball(HyperballConfig.defaults()));
        org.junit.jupiter.api.Assertions.assertEquals("cautiousWeightDecay must be false with hyperball (it is a "
                + "weight decay, which the sphere replaces), got true", e.getMessage());
    }
}
