package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Gradient accumulation: {@code k} micro-batches, each backward of its mean loss divided by {@code k}, then one
 * {@code step()}, equal one step on the whole batch's mean loss, for {@link Muon} and {@link MuonAdamW}. The
 * optimizers read the gradients libtorch accumulated once, in {@code step()}: these tests guard that (an
 * invariant that holds; they fail if a step ever read or changed gradients per backward, or counted, scanned or
 * clipped per micro-batch). The whole batch's gradient and the sum of the micro-batches' differ by the order of
 * float sums only: in float64 the runs agree to 1e-12 after three steps; in float32 to the golden suite's 1e-5.
 */
@ExtendWith(NativeScopePerTest.class)
class GradientAccumulationTest {
    private static final int BATCH = 12;
    private static final int STEPS = 3;
    private static final long IN = 8;
    private static final long CLASSES = 4;

    /** A two-hidden-layer classifier: fc1 and fc2 on Muon, the head and the bias on AdamW (output-layer rule). */
    private static Map<String, Tensor> model(ScalarType dtype) {
        torch.manual_seed(17);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("fc1.weight", torch.randn(16, IN).div(new Scalar(Math.sqrt(IN))).to(dtype).requires_grad_(true));
        named.put("fc1.bias", torch.zeros(16).to(dtype).requires_grad_(true));
        named.put("fc2.weight", torch.randn(16, 16).div(new Scalar(4.0)).to(dtype).requires_grad_(true));
        named.put("head.weight", torch.randn(CLASSES, 16).div(new Scalar(4.0)).to(dtype).requires_grad_(true));
        return named;
    }

    /** Step {@code step}'s batch: inputs {@code [12, 8]} and labels, the same for every run. */
    private static Tensor[] batch(int step, ScalarType dtype) {
        torch.manual_seed(100 + step);
        return new Tensor[]{torch.randn(BATCH, IN).to(dtype), torch.randint(CLASSES, new long[]{BATCH})};
    }

    /** The mean cross-entropy over rows {@code [from, to)} of a batch, times {@code scale}, with its backward. */
    private static void backward(Map<String, Tensor> m, Tensor[] batch, long from, long to, double scale) {
        Tensor x = batch[0].narrow(0, from, to - from);
        Tensor y = batch[1].narrow(0, from, to - from);
        Tensor h = torch.relu(x.matmul(m.get("fc1.weight").t()).add(m.get("fc1.bias")));
        h = torch.relu(h.matmul(m.get("fc2.weight").t()));
        Tensor loss = torch.cross_entropy(h.matmul(m.get("head.weight").t()), y);
        loss.mul(new Scalar(scale)).backward();
    }

    /** One step's backward: the whole batch ({@code k = 1}) or {@code k} micro-batches of equal size. */
    static void accumulate(Map<String, Tensor> m, Tensor[] batch, int k) {
        long rows = BATCH / k;
        for (int j = 0; j < k; j++) {
            backward(m, batch, j * rows, (j + 1) * rows, 1.0 / k);
        }
    }

    /** The two optimizers, built the same way over a model. */
    interface Build {
        TrainingStep of(Map<String, Tensor> model);
    }

    /** What the tests need of either optimizer. */
    interface TrainingStep {
        void step();

        void zeroGrad();

        long stepCount();
    }

    static Stream<Arguments> optimizers() {
        Build muon = m -> {
            Muon o = Muon.of(List.of(m.get("fc1.weight"), m.get("fc2.weight"), m.get("head.weight")),
                    MuonConfig.defaults().withLr(0.02));
            return new TrainingStep() {
                public void step() {
                    o.step();
                }

                public void zeroGrad() {
                    o.zeroGrad();
                    m.get("fc1.bias").mutable_grad().put(new Tensor());
                }

                public long stepCount() {
                    return o.stepCount();
                }
            };
        };
        Build hybrid = m -> {
            MuonAdamW o = MuonAdamW.builder(m).muon(MuonConfig.defaults().withLr(0.02))
                    .adamW(AdamWConfig.defaults().withLr(3e-3)).build();
            return new TrainingStep() {
                public void step() {
                    o.step();
                }

                public void zeroGrad() {
                    o.zeroGrad();
                }

                public long stepCount() {
                    return o.stepCount();
                }
            };
        };
        List<Arguments> rows = new ArrayList<>();
        for (int k : new int[]{2, 3, 4}) {
            rows.add(Arguments.of("Muon", muon, k, ScalarType.Double, 1e-12));
            rows.add(Arguments.of("MuonAdamW", hybrid, k, ScalarType.Double, 1e-12));
        }
        rows.add(Arguments.of("Muon", muon, 3, ScalarType.Float, 1e-5));
        rows.add(Arguments.of("MuonAdamW", hybrid, 3, ScalarType.Float, 1e-5));
        return rows.stream();
    }

    private static Map<String, Tensor> train(Build build, int k, ScalarType dtype) {
        Map<String, Tensor> m = model(dtype);
        TrainingStep opt = build.of(m);
        for (int step = 0; step < STEPS; step++) {
            opt.zeroGrad();
            accumulate(m, batch(step, dtype), k);
            opt.step();
        }
        assertEquals(STEPS, opt.stepCount(), "one step per step() call, not per micro-batch");
        return m;
    }

    @ParameterizedTest(name = "{0} k={2} {3}")
    @MethodSource("optimizers")
    void kMicroBatchesThenOneStep_equalOneStepOnTheWholeBatch_holdsAlready(String label, Build build, int k,
                                                                          ScalarType dtype, double tolerance) {
        Map<String, Tensor> whole = train(build, 1, dtype);
        Map<String, Tensor> accumulated = train(build, k, dtype);
        Map<String, Tensor> initial = model(dtype);
        for (String name : whole.keySet()) {
            double moved = whole.get(name).sub(initial.get(name)).abs().max().item_double();
            double diff = whole.get(name).sub(accumulated.get(name)).abs().max().item_double();
            assertTrue(diff <= tolerance, label + " k=" + k + ": '" + name + "' differs by " + diff);
            // fc1.bias is on no optimizer of the Muon case: it stays, and must not be compared as if it moved.
            assertTrue(moved > 1e-3 || (label.equals("Muon") && name.equals("fc1.bias")),
                    label + ": '" + name + "' moved by only " + moved);
        }
    }

    /**
     * The gradients a step reads are the sum of the micro-batches' backward passes, as libtorch accumulates
     * them: divided by {@code k}, the whole batch's mean gradient; undivided, {@code k} times it (so a mean-reduced
     * loss must be divided, as the contract says).
     */
    @Test
    void accumulatedGradients_areTheSumOfTheMicroBatches() {
        Tensor[] b = batch(0, ScalarType.Double);
        Map<String, Tensor> whole = model(ScalarType.Double);
        accumulate(whole, b, 1);
        Map<String, Tensor> divided = model(ScalarType.Double);
        accumulate(divided, b, 4);
        Map<String, Tensor> undivided = model(ScalarType.Double);
        for (int j = 0; j < 4; j++) {
            backward(undivided, b, j * 3, (j + 1) * 3, 1.0);
        }
        for (String name : whole.keySet()) {
            Tensor g = whole.get(name).grad();
            assertTrue(g.sub(divided.get(name).grad()).abs().max().item_double() <= 1e-15 * (1 + g.abs().max()
                    .item_double()), name);
            assertTrue(g.mul(new Scalar(4.0)).sub(undivided.get(name).grad()).abs().max().item_double()
                    <= 1e-14 * (1 + g.abs().max().item_double()), name);
        }
    }

    /**
     * A NaN in one micro-batch makes the accumulated gradient NaN: under SKIP the whole step is skipped once (one
     * WARNING, nothing changed, the step not counted), and the next step goes on as if that batch had not been
     * seen; under RAISE the step throws once, and nothing changes.
     */
    @Test
    void nanInOneMicroBatch_skipsTheWholeStepOnce() {
        Map<String, Tensor> clean = model(ScalarType.Double);
        MuonAdamW cleanOpt = MuonAdamW.builder(clean).build();
        cleanOpt.zeroGrad();
        accumulate(clean, batch(1, ScalarType.Double), 3);
        cleanOpt.step();

        Map<String, Tensor> m = model(ScalarType.Double);
        MuonAdamW opt = MuonAdamW.builder(m).build();
        Tensor[] poisoned = batch(0, ScalarType.Double);
        poisoned[0].select(0, 5).fill_(new Scalar(Double.NaN));
        Map<String, Tensor> before = copies(m);
        try (CapturedLog log = new CapturedLog(MuonAdamW.class.getName())) {
            opt.zeroGrad();
            accumulate(m, poisoned, 3);
            opt.step();
            assertEquals(1, log.messages(Level.WARNING).size(), log.messages(Level.WARNING).toString());
            assertTrue(log.messages(Level.WARNING).get(0).startsWith("MuonAdamW: step 1 skipped: the gradient of "
                    + "parameter 'fc1.weight' holds NaN or Inf"), log.messages(Level.WARNING).get(0));
        }
        assertTrue(opt.lastStep().skipped());
        assertEquals(0, opt.stepCount());
        before.forEach((name, t) -> assertTrue(t.equal(m.get(name)), name + " moved in a skipped step"));
        opt.zeroGrad();
        accumulate(m, batch(1, ScalarType.Double), 3);
        opt.step();
        assertEquals(1, opt.stepCount());
        for (String name : m.keySet()) {
            assertTrue(m.get(name).sub(clean.get(name)).abs().max().item_double() <= 1e-12,
                    name + " differs from the run that never saw the poisoned batch");
        }

        Map<String, Tensor> raising = model(ScalarType.Double);
        MuonAdamW strict = MuonAdamW.builder(raising).nonFinitePolicy(NonFinitePolicy.RAISE).build();
        accumulate(raising, poisoned, 3);
        Map<String, Tensor> unchanged = copies(raising);
        IllegalStateException e = assertThrows(IllegalStateException.class, strict::step);
        assertEquals("the gradient of parameter 'fc1.weight' holds NaN or Inf (nonFinitePolicy RAISE); nothing "
                + "was changed", e.getMessage());
        unchanged.forEach((name, t) -> assertTrue(t.equal(raising.get(name)), name + " moved"));
        assertEquals(0, strict.stepCount());
    }

    /**
     * QK-Clip over micro-batches: each micro-batch's forward reports its own largest logit per head, the hook keeps
     * the maximum, and the step clips by it; the result is the whole batch's step with the whole batch's report
     * (sequences attend within themselves, so the batch's largest logit is the largest of its micro-batches').
     */
    @Test
    void qkClip_reportsOfMicroBatches_clipLikeTheWholeBatch() {
        QkClip.Heads heads = QkClip.Heads.of(2, 4);
        double[][] gammas = new double[2][];
        List<Map<String, Tensor>> runs = new ArrayList<>();
        for (int k : new int[]{1, 3}) {
            Map<String, Tensor> m = QkClipFixtures.named(8, "q", new long[]{8, 6}, "k", new long[]{8, 6});
            QkClip clip = QkClip.builder(m).tau(1.5).layer("attn", "q", "k", heads).build();
            Muon muon = Muon.builder().addGroup(m.values(), MuonConfig.defaults().withLr(0.02)).qkClip(clip)
                    .build();
            torch.manual_seed(9);
            Tensor sequences = torch.randn(6, 5, 6).to(ScalarType.Double);
            int per = 6 / k;
            for (int j = 0; j < k; j++) {
                // The loss pulls the largest logits up, so the step grows them and the clip has work to do.
                TensorVector perSequence = new TensorVector();
                for (int s = j * per; s < (j + 1) * per; s++) {
                    perSequence.push_back(QkClipFixtures.maxLogits(sequences.select(0, s), m.get("q"), m.get("k"),
                            heads));
                }
                Tensor logits = torch.stack(perSequence);
                try (NoGradGuard noGrad = new NoGradGuard()) {
                    clip.report("attn", logits.detach().amax(new long[]{0}, false));
                }
                logits.sum().neg().div(new Scalar(6.0)).backward();
            }
            muon.step();
            gammas[runs.size()] = clip.lastGammas("attn");
            runs.add(m);
        }
        assertTrue(gammas[0][0] < 1 || gammas[0][1] < 1, "tau must clip some head: " + gammas[0][0] + ", "
                + gammas[0][1]);
        assertArrayEquals(gammas[0], gammas[1], 1e-14);
        for (String name : runs.get(0).keySet()) {
            assertTrue(runs.get(0).get(name).sub(runs.get(1).get(name)).abs().max().item_double() <= 1e-12, name);
        }
    }

    private static Map<String, Tensor> copies(Map<String, Tensor> m) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        m.forEach((name, t) -> out.put(name, t.detach().clone()));
        return out;
    }
}
