package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static dev.muon.QkClipFixtures.copy;
import static dev.muon.QkClipFixtures.maxLogitValues;
import static dev.muon.QkClipFixtures.named;
import static dev.muon.QkClipFixtures.referenceClip;
import static dev.muon.QkClipFixtures.sameGradients;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * QK-Clip on both optimizers against a float64 reference written from the formula: a hooked optimizer and an
 * unhooked twin take the same step from the same values, and the hooked one must end at the reference clip of the
 * twin's result, with parameters in float64, float32 and bfloat16.
 */
@ExtendWith(NativeScopePerTest.class)
class QkClipTest {
    /** One multiplication per element in float64 on both sides; pow may differ from the reference in its last bit. */
    private static final double TOLERANCE = 1e-14;

    /**
     * The clip's error against the float64 reference in a parameter dtype: libtorch multiplies a float32 or
     * bfloat16 weight by the factor in float32 (its opmath type), so each element carries the factor's rounding to
     * float32 and the product's to the dtype, each at most half a unit in the last place (relative 2^-24 and, for
     * bfloat16's 8 significant bits, 2^-8), with a unit of float32 to spare.
     */
    static double tolerance(torch.ScalarType dtype) {
        // By value: a tensor's scalar_type() from JavaCPP need not be the enum's own constant.
        if (dtype.value == torch.ScalarType.Double.value) {
            return TOLERANCE;
        }
        if (dtype.value == torch.ScalarType.Float.value) {
            return 0x1p-24 + 0x1p-24 + 0x1p-23;
        }
        if (dtype.value == torch.ScalarType.BFloat16.value) {
            return 0x1p-24 + 0x1p-8 + 0x1p-23;
        }
        throw new IllegalArgumentException("no bound for " + dtype);
    }

    /** The dtypes users train in, and float64 for the reference's own precision. */
    static final List<torch.ScalarType> DTYPES = List.of(torch.ScalarType.Double, torch.ScalarType.Float,
            torch.ScalarType.BFloat16);

    /** Every layout and alpha in every dtype. */
    static Stream<Arguments> layoutsAlphasAndDtypes() {
        return layoutsAndAlphas().flatMap(a -> DTYPES.stream().map(d -> Arguments.of(a.get()[0], a.get()[1], d)));
    }

    /** A layout under test: how to register it and where its query and key rows are. */
    record Layout(String label, QkClip.Heads heads, boolean fused) {
        @Override
        public String toString() {
            return label;
        }
    }

    static Stream<Arguments> layoutsAndAlphas() {
        List<Layout> layouts = List.of(
                new Layout("mha", QkClip.Heads.of(3, 4), false),
                new Layout("gqa", QkClip.Heads.grouped(4, 2, 3), false),
                new Layout("mqa", QkClip.Heads.grouped(3, 1, 4), false),
                new Layout("fusedQkv", QkClip.Heads.of(2, 5), true),
                new Layout("fusedGqa", QkClip.Heads.grouped(4, 2, 2), true));
        return layouts.stream().flatMap(l -> Stream.of(0.5, 0.0, 1.0, 0.3).map(a -> Arguments.of(l, a)));
    }

    /** The layouts with separate W_q and W_k, whose logits the test can compute from the two matrices. */
    static Stream<Arguments> separateLayoutsAndAlphas() {
        return layoutsAndAlphas().filter(a -> !((Layout) a.get()[0]).fused());
    }

    /** The model of one layout: W_q and W_k (or one fused W_qkv) with 6 input columns, and an MLP matrix. */
    private static Map<String, Tensor> model(Layout layout, long seed) {
        return model(layout, seed, torch.ScalarType.Double);
    }

    private static Map<String, Tensor> model(Layout layout, long seed, torch.ScalarType dtype) {
        QkClip.Heads h = layout.heads();
        long q = (long) h.queryHeads() * h.headDim();
        long k = (long) h.keyHeads() * h.headDim();
        if (layout.fused()) {
            return named(dtype, seed, "qkv", new long[]{q + 2 * k, 6}, "mlp", new long[]{5, 6});
        }
        return named(dtype, seed, "q", new long[]{q, 6}, "k", new long[]{k, 6}, "mlp", new long[]{5, 6});
    }

    private static QkClip clip(Map<String, Tensor> model, Layout layout, double tau, double alpha) {
        QkClip.Builder b = QkClip.builder(model).tau(tau).alpha(alpha);
        if (layout.fused()) {
            long q = (long) layout.heads().queryHeads() * layout.heads().headDim();
            return b.fusedLayer("attn", "qkv", layout.heads(), 0, q).build();
        }
        return b.layer("attn", "q", "k", layout.heads()).build();
    }

    /** Logits spread over the threshold: some heads far above, one exactly at it, one below, one negative. */
    private static double[] logits(int heads, double tau) {
        double[] pattern = {4 * tau, tau, 0.5 * tau, 1.5 * tau, -3, 10 * tau, tau * (1 + 1e-9)};
        double[] out = new double[heads];
        for (int h = 0; h < heads; h++) {
            out[h] = pattern[h % pattern.length];
        }
        return out;
    }

    /** The reference clip of {@code twin}'s query and key rows, compared with {@code hooked}'s. */
    private static void assertClipped(Map<String, Tensor> twin, Map<String, Tensor> hooked, Layout layout,
                                      double[] s, double tau, double alpha) {
        double bound = tolerance(hooked.values().iterator().next().scalar_type());
        QkClip.Heads h = layout.heads();
        long q = (long) h.queryHeads() * h.headDim();
        if (layout.fused()) {
            double[] w = Tensors.values(twin.get("qkv"));
            double[] expected = referenceClip(referenceClip(w, 6, 0, true, s, h, tau, alpha), 6, q, false, s, h,
                    tau, alpha);
            assertTrue(Tensors.relativeError(hooked.get("qkv"), expected) <= bound,
                    "fused weight: " + Tensors.relativeError(hooked.get("qkv"), expected));
        } else {
            double[] eq = referenceClip(Tensors.values(twin.get("q")), 6, 0, true, s, h, tau, alpha);
            double[] ek = referenceClip(Tensors.values(twin.get("k")), 6, 0, false, s, h, tau, alpha);
            assertTrue(Tensors.relativeError(hooked.get("q"), eq) <= bound, "W_q: " + Tensors.relativeError(
                    hooked.get("q"), eq));
            assertTrue(Tensors.relativeError(hooked.get("k"), ek) <= bound, "W_k: " + Tensors.relativeError(
                    hooked.get("k"), ek));
        }
        assertArrayEquals(Tensors.values(twin.get("mlp")), Tensors.values(hooked.get("mlp")),
                "a matrix no layer names must be left alone");
    }

    /**
     * A hooked model and its unhooked twin of the same values, the clip (τ = 7.5) on the hooked one, and the logits
     * spread over τ that it is told before each step.
     */
    private record Twins(Layout layout, double alpha, Map<String, Tensor> hooked, Map<String, Tensor> twin,
                         QkClip clip, double[] s) {
        static final double TAU = 7.5;

        static Twins of(Layout layout, double alpha, long seed, torch.ScalarType dtype) {
            Map<String, Tensor> hooked = model(layout, seed, dtype);
            return new Twins(layout, alpha, hooked, copy(hooked), QkClipTest.clip(hooked, layout, TAU, alpha),
                    logits(layout.heads().queryHeads(), TAU));
        }

        /** One step of both optimizers on the same gradients, the logits reported first; then the reference check. */
        void stepAndCompare(long gradientSeed, torch.ScalarType logitsDtype, TrainingOptimizer withClip,
                            TrainingOptimizer without) {
            sameGradients(gradientSeed, hooked, twin);
            clip.report("attn", Tensors.of(s, new long[]{s.length}, logitsDtype));
            withClip.step();
            without.step();
            assertClipped(twin, hooked, layout, s, TAU, alpha);
        }
    }

    @ParameterizedTest(name = "{0} alpha={1} {2}")
    @MethodSource("layoutsAlphasAndDtypes")
    void muon_clipsAfterTheStep_likeTheFloat64Reference(Layout layout, double alpha, torch.ScalarType dtype) {
        Twins t = Twins.of(layout, alpha, 11, dtype);
        Muon withClip = Muon.builder().addGroup(t.hooked().values(), MuonConfig.defaults().withLr(0.05))
                .qkClip(t.clip()).build();
        Muon without = Muon.of(t.twin().values(), MuonConfig.defaults().withLr(0.05));
        t.stepAndCompare(3, torch.ScalarType.Float, withClip, without);
    }

    @ParameterizedTest(name = "{0} alpha={1} {2}")
    @MethodSource("layoutsAlphasAndDtypes")
    void muonAdamW_clipsAfterTheStep_likeTheFloat64Reference(Layout layout, double alpha, torch.ScalarType dtype) {
        Twins t = Twins.of(layout, alpha, 12, dtype);
        // W_k on AdamW where it is its own matrix, so that weights of both kinds are clipped.
        String[] onAdamW = layout.fused() ? new String[0] : new String[]{"k"};
        MuonAdamW withClip = MuonAdamW.builder(t.hooked()).forceAdamW(onAdamW).qkClip(t.clip()).build();
        MuonAdamW without = MuonAdamW.builder(t.twin()).forceAdamW(onAdamW).build();
        for (int step = 0; step < 2; step++) {
            t.stepAndCompare(4 + step, torch.ScalarType.Double, withClip, without);
            // The twin continues from the clipped values, so that the next step compares one step again.
            try (NoGradGuard noGrad = new NoGradGuard()) {
                t.twin().forEach((name, x) -> x.copy_(t.hooked().get(name)));
            }
        }
    }

    /**
     * The point of the clip: on the batch that was measured, the recomputed largest logit of every head over
     * {@code τ} is {@code τ} (its logits scale by exactly {@code γ}), and every other head's logits are untouched.
     */
    @ParameterizedTest(name = "{0} alpha={1}")
    @MethodSource("separateLayoutsAndAlphas")
    void recomputedMaxLogit_isTauForClippedHeads_andUnchangedForTheRest(Layout layout, double alpha) {
        Map<String, Tensor> m = model(layout, 13);
        try (NoGradGuard noGrad = new NoGradGuard()) {
            m.get("q").mul_(new org.bytedeco.pytorch.Scalar(3));
            m.get("k").mul_(new org.bytedeco.pytorch.Scalar(3));
        }
        torch.manual_seed(5);
        Tensor x = torch.randn(9, 6).to(torch.ScalarType.Double);
        double[] before = maxLogitValues(x, m.get("q"), m.get("k"), layout.heads());
        double tau = median(before);
        QkClip clip = QkClip.builder(m).tau(tau).alpha(alpha).layer("attn", "q", "k", layout.heads()).build();
        // lr 0: the step changes nothing, so the clip alone acts on the measured weights.
        Muon muon = Muon.builder().addGroup(m.values(), MuonConfig.defaults().withLr(0)).qkClip(clip).build();
        clip.report("attn", QkClipFixtures.maxLogits(x, m.get("q"), m.get("k"), layout.heads()));
        muon.step();
        double[] after = maxLogitValues(x, m.get("q"), m.get("k"), layout.heads());
        int clipped = 0;
        for (int h = 0; h < before.length; h++) {
            if (before[h] > tau) {
                clipped++;
                assertEquals(tau, after[h], 1e-12 * tau, "head " + h + " was at " + before[h]);
            } else {
                assertEquals(before[h], after[h], 1e-12 * Math.abs(before[h]), "head " + h + " was under tau");
            }
        }
        assertTrue(clipped > 0, "no head was over tau: the test would prove nothing");
    }

    private static Tensor vec(double... values) {
        return Tensors.of(values, new long[]{values.length}, torch.ScalarType.Double);
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        java.util.Arrays.sort(sorted);
        return sorted[(sorted.length - 1) / 2];
    }

    @Test
    void noReport_orReportsUnderTau_changeNothing() {
        Layout layout = new Layout("mha", QkClip.Heads.of(3, 4), false);
        Map<String, Tensor> hooked = model(layout, 14);
        Map<String, Tensor> twin = copy(hooked);
        QkClip clip = clip(hooked, layout, 10, 0.5);
        Muon withClip = Muon.builder().addGroup(hooked.values(), MuonConfig.defaults()).qkClip(clip).build();
        Muon without = Muon.of(twin.values(), MuonConfig.defaults());
        for (int step = 0; step < 3; step++) {
            sameGradients(20 + step, hooked, twin);
            if (step == 1) {
                clip.report("attn", vec(10, -5, 9.99));
            }
            withClip.step();
            without.step();
            for (String name : hooked.keySet()) {
                assertTrue(twin.get(name).equal(hooked.get(name)), name + " differs at step " + step);
            }
            assertArrayEquals(new double[]{1, 1, 1}, clip.lastGammas("attn"));
        }
    }

    /** An MHA model of 4-wide heads with a clip at τ = 10, α = 0.5, under a Muon at lr 0: only the clip moves it. */
    private record ClipOnly(Map<String, Tensor> model, QkClip clip, Muon muon) {
        static ClipOnly of(int heads, long seed) {
            Layout layout = new Layout("mha", QkClip.Heads.of(heads, 4), false);
            Map<String, Tensor> m = QkClipTest.model(layout, seed);
            QkClip clip = QkClipTest.clip(m, layout, 10, 0.5);
            return new ClipOnly(m, clip, Muon.builder().addGroup(m.values(), MuonConfig.defaults().withLr(0))
                    .qkClip(clip).build());
        }
    }

    @Test
    void reportsOfOneStep_keepTheLargerValuePerHead_andTheStepClearsThem() {
        ClipOnly c = ClipOnly.of(3, 15);
        c.clip().report("attn", vec(40, 5, 20));
        c.clip().report("attn", vec(20, 50, 1));
        c.muon().step();
        assertArrayEquals(new double[]{10.0 / 40, 10.0 / 50, 10.0 / 20}, c.clip().lastGammas("attn"), 0);
        double[] q = Tensors.values(c.model().get("q"));
        c.muon().step();
        assertArrayEquals(new double[]{1, 1, 1}, c.clip().lastGammas("attn"));
        assertArrayEquals(q, Tensors.values(c.model().get("q")), "a step with no report must not clip again");
    }

    @Test
    void rejectedReport_leavesThePendingReportsAsTheyWere() {
        ClipOnly c = ClipOnly.of(2, 16);
        c.clip().report("attn", vec(20, 5));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> c.clip().report("attn", vec(100, Double.NaN)));
        c.muon().step();
        assertArrayEquals(new double[]{0.5, 1}, c.clip().lastGammas("attn"), 0);
    }

    @Test
    void twoLayers_areClippedEachByItsOwnReport() {
        Map<String, Tensor> m = named(17, "a.q", new long[]{4, 6}, "a.k", new long[]{4, 6}, "b.qkv",
                new long[]{12, 6}, "mlp", new long[]{5, 6});
        Map<String, Tensor> twin = copy(m);
        QkClip.Heads heads = QkClip.Heads.of(2, 2);
        QkClip clip = QkClip.builder(m).tau(1).layer("a", "a.q", "a.k", heads)
                .fusedLayer("b", "b.qkv", heads, 0, 4).build();
        Muon muon = Muon.builder().addGroup(m.values(), MuonConfig.defaults().withLr(0)).qkClip(clip).build();
        clip.report("b", vec(4, 0.5));
        muon.step();
        assertArrayEquals(Tensors.values(twin.get("a.q")), Tensors.values(m.get("a.q")));
        assertArrayEquals(Tensors.values(twin.get("a.k")), Tensors.values(m.get("a.k")));
        double[] s = {4, 0.5};
        double[] expected = referenceClip(referenceClip(Tensors.values(twin.get("b.qkv")), 6, 0, true, s, heads, 1,
                0.5), 6, 4, false, s, heads, 1, 0.5);
        assertTrue(Tensors.relativeError(m.get("b.qkv"), expected) <= TOLERANCE);
        // The value rows (8..11) of the fused weight are not touched.
        assertTrue(m.get("b.qkv").narrow(0, 8, 4).equal(twin.get("b.qkv").narrow(0, 8, 4)));
    }

    /** A step that MuonAdamW skips (a NaN gradient) applies nothing, the clip included; its reports carry over. */
    @Test
    void muonAdamW_skippedStep_keepsTheReportsForTheNextStep() {
        Layout layout = new Layout("mha", QkClip.Heads.of(2, 3), false);
        Map<String, Tensor> m = model(layout, 18);
        QkClip clip = clip(m, layout, 10, 0.5);
        MuonAdamW opt = MuonAdamW.builder(m).qkClip(clip).muon(MuonConfig.defaults().withLr(0))
                .adamW(AdamWConfig.defaults().withLr(0)).build();
        double[] q = Tensors.values(m.get("q"));
        clip.report("attn", vec(40, 1));
        m.values().forEach(t -> t.mutable_grad().put(torch.zeros_like(t)));
        m.get("mlp").mutable_grad().put(torch.full(new long[]{5, 6}, new org.bytedeco.pytorch.Scalar(Double.NaN))
                .to(torch.ScalarType.Double));
        opt.step();
        assertTrue(opt.lastStep().skipped());
        assertArrayEquals(q, Tensors.values(m.get("q")));
        m.get("mlp").mutable_grad().put(torch.zeros_like(m.get("mlp")));
        opt.step();
        assertFalse(opt.lastStep().skipped());
        assertArrayEquals(new double[]{0.25, 1}, clip.lastGammas("attn"), 0);
        assertNotEquals(q[0], Tensors.values(m.get("q"))[0]);
    }

    /**
     * The hook keeps no state across steps, so a checkpoint holds none of it: an optimizer that loads a checkpoint
     * and is built with the hook clips exactly as before, for both optimizers.
     */
    @Test
    void checkpointRoundTrip_keepsClipping(@TempDir Path dir) {
        Layout layout = new Layout("gqa", QkClip.Heads.grouped(4, 2, 3), false);
        double[] s = logits(4, 7.5);
        for (boolean hybrid : new boolean[]{false, true}) {
            Map<String, Tensor> first = model(layout, 19);
            QkClip firstClip = clip(first, layout, 7.5, 0.5);
            Path file = dir.resolve(hybrid ? "hybrid.ckpt" : "muon.ckpt");
            sameGradients(30, first, copy(first));
            Runnable save;
            if (hybrid) {
                MuonAdamW opt = MuonAdamW.builder(first).qkClip(firstClip).build();
                firstClip.report("attn", vec(s));
                opt.step();
                save = () -> opt.save(file);
            } else {
                Muon opt = Muon.builder().addGroup(first.values(), MuonConfig.defaults()).qkClip(firstClip).build();
                firstClip.report("attn", vec(s));
                opt.step();
                save = () -> opt.save(file);
            }
            save.run();

            Map<String, Tensor> resumed = model(layout, 99);
            Map<String, Tensor> twin = model(layout, 98);
            QkClip resumedClip = clip(resumed, layout, 7.5, 0.5);
            TrainingOptimizer withClip;
            TrainingOptimizer without;
            if (hybrid) {
                MuonAdamW a = MuonAdamW.builder(resumed).qkClip(resumedClip).build();
                MuonAdamW b = MuonAdamW.builder(twin).build();
                a.load(file);
                b.load(file);
                withClip = a;
                without = b;
            } else {
                Muon a = Muon.builder().addGroup(resumed.values(), MuonConfig.defaults()).qkClip(resumedClip).build();
                Muon b = Muon.of(twin.values(), MuonConfig.defaults());
                a.load(file);
                b.load(file);
                withClip = a;
                without = b;
            }
            sameGradients(31, resumed, twin);
            resumedClip.report("attn", vec(s));
            withClip.step();
            without.step();
            assertClipped(twin, resumed, layout, s, 7.5, 0.5);
        }
    }
}
