package dev.muon;

import dev.muon.CombinationCase.Feature;
import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import dev.muon.distributed.ShardingConfig;
import dev.muon.golden.Float64Update;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.pytorch.Tensor;
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
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
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
 * ({@link CombinationCase#refusedPair}): Gram with symmetric, two weight-update hooks, Hyperball with cautious
 * decay, and Muown with conv filters, stacks, cautious decay, bfloat16 momentum, a weight hook and QK-Clip (each
 * tested as a refusal). The cells themselves (features, parameters, optimizer, gradients) are
 * {@link CombinationCase}'s.
 */
@ExtendWith(NativeScopePerTest.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CombinationTableTest {
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
        return CombinationCase.pairs().stream().map(pair -> Arguments.of(pair[0], pair[1]));
    }

    @ParameterizedTest(name = "{0} with {1}")
    @MethodSource("pairs")
    void pair_matchesFloat64Reference(Feature a, Feature b) {
        CombinationCase cell = CombinationCase.of(a, b);
        MuonConfig config = cell.config;
        Random random = new Random(31);
        Map<String, double[]> values = cell.initialValues(random);
        Map<String, Float64Update> refs = new LinkedHashMap<>();
        values.forEach((name, v) -> refs.put(name, reference(v, cell.shapes.get(name), cell.splits.get(name),
                config)));
        Map<String, Tensor> named = cell.parameters(values);
        Map<String, Tensor> initial = new LinkedHashMap<>();
        named.forEach((k, v) -> initial.put(k, v.detach().clone()));
        QkClip clip = cell.clip(named);
        TrainingOptimizer optimizer = cell.build(named, clip, cell.has(Feature.SHARDED) ? single : null,
                ShardingConfig.defaults(), StateStorage.withParameter(), null);
        Muon muon = optimizer instanceof Muon m ? m : null;

        for (int step = 1; step <= CombinationCase.STEPS; step++) {
            boolean poisoned = cell.poisoned(step);
            Map<String, double[]> grads = cell.gradients(random, step, named);
            if (!poisoned) {
                grads.forEach((name, g) -> refs.get(name).step(g));
            }
            if (clip != null) {
                cell.report(clip);
                if (!poisoned) {
                    clipReference(refs, cell.fusedClip, cell.logits);
                }
            }
            optimizer.step();
            if (muon != null && cell.has(Feature.BATCHING) && config.nsAlgorithm() == NsAlgorithm.AUTO) {
                assertTrue(muon.batchedLastStep() > 0, "the same-shape matrices did not batch");
            }
        }
        double tolerance = cell.has(Feature.BF16_NS) ? 5e-2 * CombinationCase.STEPS : 1e-10;
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
            double gamma = logits[h] > CombinationCase.TAU ? CombinationCase.TAU / logits[h] : 1;
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

    static Stream<Feature> muownRefusals() {
        return CombinationCase.MUOWN_REFUSED.keySet().stream().sorted();
    }

    /** Each pair of Muown that the table refuses is refused, with its message, when the config or optimizer is made. */
    @ParameterizedTest(name = "MUOWN with {0}")
    @MethodSource("muownRefusals")
    void muownPair_isRefused(Feature other) {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> {
                    CombinationCase cell = CombinationCase.of(Feature.MUOWN, other);
                    Map<String, Tensor> named = cell.parameters(cell.initialValues(new Random(3)));
                    cell.build(named, cell.clip(named), null, ShardingConfig.defaults(), StateStorage.withParameter(),
                            null);
                });
        assertTrue(e.getMessage().startsWith(CombinationCase.MUOWN_REFUSED.get(other)), e.getMessage());
    }

    @org.junit.jupiter.api.Test
    void hyperballWithCautiousDecay_isRefused_becauseTheSphereReplacesWeightDecay() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> MuonConfig.defaults().withWeightDecay(0).withCautiousWeightDecay(true)
                        .withHyperball(HyperballConfig.defaults()));
        org.junit.jupiter.api.Assertions.assertEquals("cautiousWeightDecay must be false with hyperball (it is a "
                + "weight decay, which the sphere replaces), got true", e.getMessage());
    }

    @org.junit.jupiter.api.Test
    void twoWeightHooks_areRefused_becauseAGroupHasOne() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> MuonConfig.defaults().withRadialBrake(RadialBrakeConfig.defaults())
                        .withUpdateFloor(UpdateFloorConfig.defaults()));
        org.junit.jupiter.api.Assertions.assertEquals("a Muon group has at most one weight-update hook (hyperball, "
                + "radialBrake, relativeUpdate, updateFloor), as Emerging-Optimizers' weight_update_hook; got "
                + "radialBrake and updateFloor", e.getMessage());
    }
}
