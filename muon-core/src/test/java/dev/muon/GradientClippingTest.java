package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link GradientClipping#clipGradNorm}: PyTorch's {@code clip_grad_norm_} over every parameter of an optimizer,
 * against a float64 reference written here from PyTorch's formula ({@code total = sqrt(Σ g²)}, {@code coef =
 * min(maxNorm / (total + 1e-6), 1)}, {@code g ·= coef}), and what a non-finite norm does under each policy.
 */
@ExtendWith(NativeScopePerTest.class)
class GradientClippingTest {
    /**
     * Three parameters, Muon's {@code fc1.weight} and AdamW's {@code embed.weight} and {@code fc1.bias}, with
     * gradients of three sizes: the AdamW group's are the largest, so a norm of the Muon group alone would clip by
     * another factor.
     */
    private static Map<String, Tensor> model(ScalarType dtype) {
        Map<String, Tensor> named = CheckpointTest.small(dtype, 5);
        torch.manual_seed(21);
        named.get("embed.weight").mutable_grad().put(torch.randn(10, 4).mul(new Scalar(3.0)).to(dtype));
        named.get("fc1.weight").mutable_grad().put(torch.randn(5, 4).mul(new Scalar(0.5)).to(dtype));
        named.get("fc1.bias").mutable_grad().put(torch.randn(5).mul(new Scalar(2.0)).to(dtype));
        return named;
    }

    /** PyTorch's clip in float64 on the gradients' values: the clipped values by name, and the norm under "". */
    private static Map<String, double[]> reference(Map<String, Tensor> named, double maxNorm) {
        double sum = 0;
        for (Tensor p : named.values()) {
            if (p.grad().defined()) {
                for (double g : Tensors.values(p.grad())) {
                    sum += g * g;
                }
            }
        }
        double total = Math.sqrt(sum);
        double coef = Math.min(maxNorm / (total + 1e-6), 1.0);
        Map<String, double[]> out = new LinkedHashMap<>();
        out.put("", new double[]{total});
        named.forEach((name, p) -> {
            if (p.grad().defined()) {
                double[] g = Tensors.values(p.grad());
                for (int i = 0; i < g.length; i++) {
                    g[i] *= coef;
                }
                out.put(name, g);
            }
        });
        return out;
    }

    private static void assertClippedLikeReference(Map<String, Tensor> named, Map<String, double[]> expected,
                                                   double norm, double tolerance) {
        assertEquals(expected.get("")[0], norm, tolerance * expected.get("")[0], "the norm before clipping");
        for (Map.Entry<String, double[]> e : expected.entrySet()) {
            if (!e.getKey().isEmpty()) {
                double error = Tensors.relativeError(named.get(e.getKey()).grad(), e.getValue());
                assertTrue(error <= tolerance, e.getKey() + ": relative error " + error);
            }
        }
    }

    /** The dtypes users train in, and float64 for the reference's own precision. */
    private static final List<ScalarType> DTYPES = List.of(ScalarType.Double, ScalarType.Float, ScalarType.BFloat16);

    /**
     * The relative bound against the float64 reference: float64 to rounding; float32 to float32's (each gradient's
     * norm is summed in float32, as PyTorch's is, about 1e-7 relative); bfloat16 to three of its half units in the
     * last place (2^-9 each: each gradient's norm is rounded to bfloat16, as PyTorch's is, which moves the factor by
     * as much, and the product is rounded to bfloat16), with float32's terms inside the fourth.
     */
    private static double tolerance(ScalarType dtype) {
        if (dtype.value == ScalarType.Double.value) {
            return 1e-14;
        }
        return dtype.value == ScalarType.Float.value ? 1e-6 : 0x1p-7;
    }

    /** 0.5 clips by about 1/22, 1e3 not at all. */
    @ParameterizedTest
    @ValueSource(doubles = {0.5, 7.0, 1e3})
    void muonAdamW_bothGroups_clipLikeTheFloat64Reference(double maxNorm) {
        for (ScalarType dtype : DTYPES) {
            Map<String, Tensor> named = model(dtype);
            MuonAdamW opt = CheckpointTest.hybrid(named);
            Map<String, double[]> expected = reference(named, maxNorm);
            double norm = GradientClipping.clipGradNorm(opt, maxNorm);
            assertClippedLikeReference(named, expected, norm, tolerance(dtype));
            // The AdamW group holds most of the norm: a clip over the Muon group alone would be far off.
            assertTrue(expected.get("")[0] > 3 * Math.sqrt(sumOfSquares(named.get("fc1.weight").grad())));
        }
    }

    /** Under the norm, every gradient keeps its bits (PyTorch multiplies by 1.0, which keeps them too). */
    @Test
    void muonAdamW_underMaxNorm_keepsEveryGradientBitForBit() {
        Map<String, Tensor> named = model(ScalarType.Float);
        MuonAdamW opt = CheckpointTest.hybrid(named);
        Map<String, Tensor> before = grads(named);
        double norm = GradientClipping.clipGradNorm(opt, Double.POSITIVE_INFINITY);
        assertEquals(reference(named, 1).get("")[0], norm, 1e-6 * norm);
        before.forEach((name, g) -> assertTrue(g.equal(named.get(name).grad()), name + " changed"));
    }

    /** A tied weight is one parameter: its gradient counts once. A parameter without a gradient counts nothing. */
    @Test
    void muonAdamW_tiedWeightOnce_andNoGradientSkipped() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("wte.weight", torch.randn(10, 4).to(ScalarType.Double).requires_grad_(true));
        named.put("h.0.weight", torch.randn(4, 4).to(ScalarType.Double).requires_grad_(true));
        named.put("h.1.weight", torch.randn(4, 4).to(ScalarType.Double).requires_grad_(true));
        named.put("lm_head.weight", named.get("wte.weight"));
        named.get("wte.weight").mutable_grad().put(torch.randn(10, 4).to(ScalarType.Double));
        named.get("h.0.weight").mutable_grad().put(torch.randn(4, 4).to(ScalarType.Double));
        MuonAdamW opt = MuonAdamW.builder(named).build();
        Map<String, Tensor> distinct = new LinkedHashMap<>(named);
        distinct.remove("lm_head.weight");
        Map<String, double[]> expected = reference(distinct, 1.0);
        double norm = GradientClipping.clipGradNorm(opt, 1.0);
        assertClippedLikeReference(distinct, expected, norm, 1e-14);
        assertTrue(!named.get("h.1.weight").grad().defined(), "a parameter without a gradient got one");
    }

    /** Muon alone, two groups: every parameter of every group, in every dtype. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = ScalarType.class, names = {"Double", "Float", "BFloat16"})
    void muon_everyGroup_clipsLikeTheFloat64Reference(ScalarType dtype) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        torch.manual_seed(5);
        for (String name : List.of("a", "b", "c")) {
            Tensor p = torch.randn(6, 4).to(dtype).requires_grad_(true);
            p.mutable_grad().put(torch.randn(6, 4).to(dtype));
            named.put(name, p);
        }
        Muon muon = Muon.builder().addGroup(List.of(named.get("a"), named.get("b")), MuonConfig.defaults())
                .addGroup(List.of(named.get("c")), MuonConfig.defaults().withLr(0.01)).build();
        Map<String, double[]> expected = reference(named, 2.0);
        assertTrue(expected.get("")[0] > 4, "2.0 clips");
        double norm = GradientClipping.clipGradNorm(muon, 2.0);
        assertClippedLikeReference(named, expected, norm, tolerance(dtype));
    }

    /**
     * SKIP (MuonAdamW's default): the norm says NaN, the gradients are the user's as they were, and the step that
     * follows skips as a whole.
     */
    @Test
    void nonFiniteNorm_underSkip_leavesTheGradients_andTheStepSkips() {
        Map<String, Tensor> named = model(ScalarType.Float);
        named.get("fc1.bias").grad().select(0, 2).fill_(new Scalar(Double.NaN));
        MuonAdamW opt = CheckpointTest.hybrid(named);
        Map<String, Tensor> grads = grads(named);
        Map<String, Tensor> params = values(named);
        assertTrue(Double.isNaN(GradientClipping.clipGradNorm(opt, 1.0)));
        grads.forEach((name, g) -> assertTrue(g.equal(named.get(name).grad()) || name.equals("fc1.bias"),
                name + " changed"));
        assertTrue(named.get("fc1.bias").grad().isnan().sum().item_long() == 1, "only the NaN the test put");
        opt.step();
        assertTrue(opt.lastStep().skipped());
        assertEquals(0, opt.stepCount());
        params.forEach((name, p) -> assertTrue(p.equal(named.get(name)), name + " moved"));
    }

    /** RAISE: the first parameter whose gradient is not finite is named, and nothing changes. */
    @Test
    void nonFiniteNorm_underRaise_namesTheParameter_andChangesNothing() {
        Map<String, Tensor> named = model(ScalarType.Float);
        named.get("fc1.bias").grad().select(0, 2).fill_(new Scalar(Double.POSITIVE_INFINITY));
        MuonAdamW opt = MuonAdamW.builder(named).nonFinitePolicy(NonFinitePolicy.RAISE).build();
        Map<String, Tensor> grads = grads(named);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> GradientClipping.clipGradNorm(opt, 1.0));
        assertEquals("the gradient of parameter 'fc1.bias' holds NaN or Inf (nonFinitePolicy RAISE); "
                + "GradientClipping.clipGradNorm changed nothing", e.getMessage());
        grads.forEach((name, g) -> assertTrue(g.equal(named.get(name).grad()), name + " changed"));
    }

    /**
     * IGNORE, and Muon, which has no policy: PyTorch's arithmetic, {@code coef = min(max / (Inf + 1e-6), 1) = 0}, so
     * an infinite entry becomes NaN and every finite one 0; a NaN norm makes every gradient NaN.
     */
    @Test
    void nonFiniteNorm_underIgnore_isPyTorchs() {
        Map<String, Tensor> named = model(ScalarType.Float);
        named.get("fc1.bias").grad().select(0, 2).fill_(new Scalar(Double.POSITIVE_INFINITY));
        MuonAdamW opt = MuonAdamW.builder(named).nonFinitePolicy(NonFinitePolicy.IGNORE).build();
        assertEquals(Double.POSITIVE_INFINITY, GradientClipping.clipGradNorm(opt, 1.0));
        assertEquals(1, named.get("fc1.bias").grad().isnan().sum().item_long());
        assertEquals(0.0, named.get("embed.weight").grad().abs().sum().item_double());

        Tensor w = torch.randn(6, 4).requires_grad_(true);
        w.mutable_grad().put(torch.randn(6, 4));
        w.grad().select(0, 0).fill_(new Scalar(Double.NaN));
        assertTrue(Double.isNaN(GradientClipping.clipGradNorm(Muon.of(List.of(w), MuonConfig.defaults()), 1.0)));
        assertEquals(24, w.grad().isnan().sum().item_long());
    }

    /**
     * {@code Double.POSITIVE_INFINITY} only measures, as the docs promise: with a NaN or an infinite entry, under
     * every policy and for {@link Muon}, it returns the non-finite norm and leaves every gradient bit for bit (PyTorch's
     * arithmetic would compute {@code ∞/∞ = NaN} and multiply every gradient by it).
     */
    static Stream<Arguments> measuringOnly() {
        return Stream.of(NonFinitePolicy.values()).flatMap(policy -> Stream.of(
                Arguments.of(policy, Double.NaN), Arguments.of(policy, Double.POSITIVE_INFINITY)));
    }

    @ParameterizedTest(name = "{0}, an entry {1}")
    @MethodSource("measuringOnly")
    void infiniteMaxNorm_onlyMeasures_aNonFiniteGradient(NonFinitePolicy policy, double bad) {
        Map<String, Tensor> named = model(ScalarType.Float);
        named.get("fc1.bias").grad().select(0, 2).fill_(new Scalar(bad));
        MuonAdamW opt = MuonAdamW.builder(named).nonFinitePolicy(policy).build();
        Map<String, Tensor> grads = grads(named);
        double total = GradientClipping.clipGradNorm(opt, Double.POSITIVE_INFINITY);
        assertTrue(!Double.isFinite(total), "the norm " + total);
        grads.forEach((name, g) -> assertTrue(torch.equal(g.isnan(), named.get(name).grad().isnan())
                && torch.equal(g.nan_to_num(), named.get(name).grad().nan_to_num()), name + " changed"));

        Tensor w = torch.randn(6, 4).requires_grad_(true);
        w.mutable_grad().put(torch.randn(6, 4));
        w.grad().select(0, 0).fill_(new Scalar(bad));
        Tensor before = w.grad().clone();
        assertTrue(!Double.isFinite(GradientClipping.clipGradNorm(Muon.of(List.of(w), MuonConfig.defaults()),
                Double.POSITIVE_INFINITY)));
        assertEquals(4, w.grad().isnan().sum().item_long() + w.grad().isinf().sum().item_long(),
                "Muon: only the row the test made non-finite");
        assertTrue(torch.equal(before.nan_to_num(), w.grad().nan_to_num()), "Muon: a gradient changed");
    }

    static Stream<Arguments> badMaxNorms() {
        return Stream.of(
                Arguments.of(0.0, "maxNorm must be > 0, got 0.0"),
                Arguments.of(-1.0, "maxNorm must be > 0, got -1.0"),
                Arguments.of(Double.NaN, "maxNorm must be > 0, got NaN"),
                Arguments.of(Double.NEGATIVE_INFINITY, "maxNorm must be > 0, got -Infinity"));
    }

    @ParameterizedTest
    @MethodSource("badMaxNorms")
    void maxNorm_notPositive_isRejected_andChangesNothing(double maxNorm, String message) {
        Map<String, Tensor> named = model(ScalarType.Float);
        MuonAdamW opt = CheckpointTest.hybrid(named);
        Map<String, Tensor> grads = grads(named);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GradientClipping.clipGradNorm(opt, maxNorm));
        assertEquals(message, e.getMessage());
        grads.forEach((name, g) -> assertTrue(g.equal(named.get(name).grad()), name + " changed"));
    }

    /** A gradient that does not fit its parameter is refused before any gradient is clipped. */
    @Test
    void gradientOfAnotherShape_isRejected_beforeAnyIsClipped() {
        Map<String, Tensor> named = model(ScalarType.Float);
        named.get("fc1.bias").mutable_grad().put(torch.randn(6));
        MuonAdamW opt = CheckpointTest.hybrid(named);
        Map<String, Tensor> grads = grads(named);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> GradientClipping.clipGradNorm(opt, 1e-3));
        assertTrue(e.getMessage().contains("parameter 'fc1.bias'"), e.getMessage());
        grads.forEach((name, g) -> assertTrue(g.equal(named.get(name).grad()), name + " changed"));
    }

    private static double sumOfSquares(Tensor t) {
        double sum = 0;
        for (double v : Tensors.values(t)) {
            sum += v * v;
        }
        return sum;
    }

    private static Map<String, Tensor> grads(Map<String, Tensor> named) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        named.forEach((name, p) -> out.put(name, p.grad().clone()));
        return out;
    }

    private static Map<String, Tensor> values(Map<String, Tensor> named) {
        Map<String, Tensor> out = new LinkedHashMap<>();
        named.forEach((name, p) -> out.put(name, p.detach().clone()));
        return out;
    }
}
