package dev.muon;

import dev.muon.golden.Float64Update;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hyperball ({@link HyperballConfig}) against the float64 reference written from its formulas
 * ({@link Float64Update}): each parameter's own norm, a fixed radius (the parameters rescaled at build), with NorMuon,
 * a row split of unequal blocks (the sphere is the whole parameter's), a stack, and a step with a zero gradient;
 * float64 within 1e-12, float32 within the golden float32 bound on an update. Then its refusals.
 */
@ExtendWith(NativeScopePerTest.class)
class HyperballTest {
    private static final int STEPS = 4;
    private static final MuonConfig BASE = MuonConfig.defaults().withLr(0.05).withWeightDecay(0)
            .withNsPrecision(NsPrecision.FLOAT64).withStackedWeights(StackedWeights.BATCH);

    /**
     * One case.
     *
     * @param name   what it shows
     * @param config the group's config
     * @param shape  the parameter's shape
     * @param blocks a row split's blocks (each matrix's), or null
     * @param zeroAt a step whose gradient is zero, or 0 for none
     */
    record Case(String name, MuonConfig config, long[] shape, int[] blocks, int zeroAt) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Case> cases() {
        HyperballConfig own = HyperballConfig.defaults();
        return Stream.of(
                new Case("own norm", BASE.withHyperball(own), new long[]{6, 10}, null, 0),
                new Case("own norm, tall", BASE.withHyperball(own), new long[]{10, 4}, null, 0),
                new Case("fixed radius", BASE.withHyperball(HyperballConfig.radius(3.0)), new long[]{6, 10}, null, 0),
                new Case("with NorMuon", BASE.withNorMuon(0.9, 1e-8).withHyperball(own), new long[]{6, 10}, null, 0),
                new Case("unequal row blocks", BASE.withHyperball(own), new long[]{6, 10}, new int[]{2, 4}, 0),
                new Case("NorMuon and row blocks", BASE.withNorMuon(0.9, 1e-8)
                        .withHyperball(HyperballConfig.radius(2.0)), new long[]{6, 10}, new int[]{1, 2, 3}, 0),
                new Case("a stack", BASE.withHyperball(own), new long[]{3, 4, 6}, null, 0),
                new Case("a zero gradient at step 2", BASE.withHyperball(own), new long[]{6, 10}, null, 2),
                new Case("no Nesterov, bfloat16 momentum", BASE.withNesterov(false)
                        .withMomentumPrecision(MomentumPrecision.BFLOAT16).withHyperball(own), new long[]{6, 10},
                        null, 0));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void float64_matchesTheReference(Case c) {
        double error = run(c, ScalarType.Double);
        assertTrue(error <= 1e-12, c + ": parameter rel error " + error);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void float32_matchesTheReference_withinTheGoldenBound(Case c) {
        double error = run(new Case(c.name(), c.config().withNsPrecision(NsPrecision.FLOAT32), c.shape(), c.blocks(),
                c.zeroAt()), ScalarType.Float);
        assertTrue(error <= 1e-5, c + ": parameter rel error " + error);
    }

    /** {@link #STEPS} steps of {@link Muon} and of the reference; the parameter's relative error. */
    private static double run(Case c, ScalarType dtype) {
        Random random = new Random(c.name().hashCode());
        double[] values = Float64Update.gaussian(random, c.shape());
        Tensor p = Tensors.of(values, c.shape(), dtype).requires_grad_(true);
        int k = c.shape().length == 3 ? (int) c.shape()[0] : 1;
        int m = (int) c.shape()[c.shape().length - 2];
        Float64Update reference = new Float64Update(Tensors.values(p.to(ScalarType.Double)), k, m, c.blocks(),
                c.config());
        Muon.Builder builder = Muon.builder().addGroup(List.of(p), c.config());
        if (c.blocks() != null) {
            builder.rowSplit(p, RowSplit.splitRows(c.blocks()));
        }
        Muon muon = builder.build();
        double radius = Tensors.relativeError(p.to(ScalarType.Double), reference.p);
        assertTrue(radius <= 1e-6, c + ": the build's rescale differs from the reference's by " + radius);
        for (int step = 1; step <= STEPS; step++) {
            double[] g = step == c.zeroAt() ? new double[values.length] : Float64Update.gaussian(random, c.shape());
            Tensor grad = Tensors.of(g, c.shape(), dtype);
            reference.step(Tensors.values(grad.to(ScalarType.Double)));
            p.mutable_grad().put(grad);
            muon.step();
        }
        return Tensors.relativeError(p.to(ScalarType.Double), reference.p);
    }

    @Test
    void norm_staysOnTheSphere_andAZeroGradientLeavesTheParameter() {
        torch.manual_seed(4);
        Tensor p = torch.randn(8, 12).to(ScalarType.Double).requires_grad_(true);
        double norm = p.norm().item_double();
        Muon muon = Muon.of(List.of(p), BASE.withHyperball(HyperballConfig.defaults()));
        for (int step = 0; step < 3; step++) {
            p.mutable_grad().put(torch.randn(8, 12).to(ScalarType.Double));
            muon.step();
            assertEquals(norm, p.norm().item_double(), 1e-12 * norm);
        }
        Tensor before = p.detach().clone();
        // A zero gradient still moves the momentum's direction: only a zero update leaves p where it is.
        Muon fresh = Muon.of(List.of(p), BASE.withMomentum(0).withHyperball(HyperballConfig.defaults()));
        p.mutable_grad().put(torch.zeros(8, 12).to(ScalarType.Double));
        fresh.step();
        assertTrue(torch.allclose(before, p.detach(), 1e-15, 0, false), "a zero update moved the parameter");
    }

    @Test
    void fixedRadius_rescalesEveryParameterAtBuild() {
        torch.manual_seed(5);
        List<Tensor> params = List.of(torch.randn(4, 6).requires_grad_(true), torch.randn(5, 3).requires_grad_(true));
        Muon.of(params, BASE.withNsPrecision(NsPrecision.FLOAT32).withHyperball(HyperballConfig.radius(2.5)));
        for (Tensor p : params) {
            assertEquals(2.5, p.norm().item_double(), 1e-5);
        }
    }

    /** MuonAdamW's Muon side too, once its build completes; its AdamW side is left as it was. */
    @Test
    void fixedRadius_rescalesMuonAdamWsMuonParametersAtBuild_only() {
        torch.manual_seed(6);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("hidden.weight", torch.randn(6, 8).requires_grad_(true));
        named.put("hidden.bias", torch.randn(6).requires_grad_(true));
        named.put("head.weight", torch.randn(3, 6).requires_grad_(true));
        Tensor biasBefore = named.get("hidden.bias").clone();
        Tensor headBefore = named.get("head.weight").clone();
        MuonAdamW.builder(named).muon(BASE.withNsPrecision(NsPrecision.FLOAT32)
                .withHyperball(HyperballConfig.radius(2.5))).build();
        assertEquals(2.5, named.get("hidden.weight").norm().item_double(), 1e-5);
        assertTrue(named.get("hidden.bias").equal(biasBefore), "a bias is AdamW's");
        assertTrue(named.get("head.weight").equal(headBefore), "the output layer is AdamW's");
    }

    static Stream<Arguments> refusals() {
        Tensor zero = torch.zeros(4, 6).requires_grad_(true);
        return Stream.of(
                Arguments.of("weight decay", (Executable) () -> MuonConfig.defaults()
                        .withHyperball(HyperballConfig.defaults()), "weightDecay must be 0 with hyperball (the "
                        + "sphere replaces weight decay), got 0.1"),
                Arguments.of("a negative radius", (Executable) () -> new HyperballConfig(-1, 1e-8),
                        "hyperball radius must be a finite number >= 0 (0: each parameter's own norm), got -1.0"),
                Arguments.of("a zero fixed radius", (Executable) () -> HyperballConfig.radius(0),
                        "hyperball radius must be a finite number > 0 for a fixed sphere, got 0.0"),
                Arguments.of("eps 0", (Executable) () -> new HyperballConfig(0, 0),
                        "hyperball eps must be a finite number > 0, got 0.0"),
                Arguments.of("a parameter of norm 0", (Executable) () -> Muon.builder()
                        .addGroup(List.of(zero), BASE.withHyperball(HyperballConfig.defaults()))
                        .names(List.of("fc.weight")).build(),
                        "hyperball needs every Muon parameter's norm to be > 0 (it is held on its sphere); "
                                + "parameter 'fc.weight' has norm 0"));
    }

    /**
     * Settings a parameter's dtype cannot hold, refused when the optimizer is built, naming the parameter, its dtype,
     * the rule and the value, with the parameter unchanged.
     */
    static Stream<Arguments> dtypeRefusals() {
        return Stream.of(
                Arguments.of("eps 1e-300, float32", ScalarType.Float, new HyperballConfig(0, 1e-300),
                        "hyperball eps must be a normal float32 number (1.17549435E-38 to 3.4028235E38) where the "
                                + "norms are float32, as they are for parameter 'fc.weight' of dtype float32, "
                                + "got 1.0E-300"),
                Arguments.of("eps 1e300, bfloat16", ScalarType.BFloat16, new HyperballConfig(0, 1e300),
                        "hyperball eps must be a normal float32 number (1.17549435E-38 to 3.4028235E38) where the "
                                + "norms are float32, as they are for parameter 'fc.weight' of dtype bfloat16, "
                                + "got 1.0E300"),
                Arguments.of("radius 1e39, float32", ScalarType.Float, HyperballConfig.radius(1e39),
                        "hyperball radius must keep every value of parameter 'fc.weight' finite in its dtype float32 "
                                + "(at most 3.4028234663852886E38; rescaled to this radius its largest value would be "),
                Arguments.of("radius 1e6, float16", ScalarType.Half, HyperballConfig.radius(1e6),
                        "hyperball radius must keep every value of parameter 'fc.weight' finite in its dtype float16 "
                                + "(at most 65504.0; rescaled to this radius its largest value would be "));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dtypeRefusals")
    void aSettingTheDtypeCannotHold_isRefusedAtBuild_andChangesNothing(String what, ScalarType dtype,
                                                                        HyperballConfig hyperball, String message) {
        torch.manual_seed(12);
        Tensor p = torch.randn(4, 6).to(dtype).requires_grad_(true);
        Tensor before = p.detach().clone();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Muon.builder()
                .addGroup(List.of(p), BASE.withNsPrecision(NsPrecision.FLOAT32).withHyperball(hyperball))
                .names(List.of("fc.weight")).build());
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
        assertTrue(torch.equal(before, p.detach()), "the refused build changed the parameter");
    }

    @Test
    void tinyEps_runsOnFloat64_whereItIsANumber() {
        torch.manual_seed(13);
        Tensor p = torch.randn(4, 6).to(ScalarType.Double).requires_grad_(true);
        Tensor before = p.detach().clone();
        Muon muon = Muon.of(List.of(p), BASE.withMomentum(0).withHyperball(new HyperballConfig(0, 1e-300)));
        p.mutable_grad().put(torch.zeros(4, 6).to(ScalarType.Double));
        muon.step();
        assertTrue(torch.allclose(before, p.detach(), 1e-15, 0, false), "a zero update moved the parameter");
    }

    /**
     * A fixed radius whose float32 sum of squares overflows (2e19² &gt; 3.4e38): the norms are taken in float64, and
     * the float32 parameter stays on its sphere instead of being zeroed; and a tiny one whose squares would underflow
     * (with an eps below it, else the floor itself moves the parameter off the sphere, as the formula says).
     */
    @ParameterizedTest(name = "radius {0}")
    @org.junit.jupiter.params.provider.ValueSource(doubles = {2e19, 1e30, 1e-25})
    void anExtremeRadius_keepsAFloat32ParameterOnItsSphere(double radius) {
        torch.manual_seed(14);
        Tensor p = torch.randn(6, 10).requires_grad_(true);
        Muon muon = Muon.of(List.of(p), BASE.withNsPrecision(NsPrecision.FLOAT32)
                .withHyperball(new HyperballConfig(radius, Math.min(1e-8, radius * 1e-10))));
        for (int step = 0; step < 3; step++) {
            p.mutable_grad().put(torch.randn(6, 10));
            muon.step();
            double norm = p.to(ScalarType.Double).norm().item_double();
            assertEquals(radius, norm, 1e-5 * radius, "step " + step + ": the norm left the sphere");
        }
    }

    /**
     * A zero update where lr·R/eps exceeds float32's range (R = 1e3, eps the smallest normal float32): the step factor
     * is clamped to the finite range, so 0·factor stays 0 instead of 0·∞ = NaN, and the parameter does not move.
     */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(value = ScalarType.class, names = {"Float", "BFloat16", "Half"})
    void aZeroUpdate_withAFactorBeyondTheDtype_leavesTheParameter(ScalarType dtype) {
        torch.manual_seed(15);
        Tensor p = torch.randn(4, 6).to(dtype).requires_grad_(true);
        Muon muon = Muon.of(List.of(p), BASE.withNsPrecision(NsPrecision.FLOAT32).withMomentum(0)
                .withHyperball(new HyperballConfig(1e3, Float.MIN_NORMAL)));
        Tensor before = p.detach().clone();
        p.mutable_grad().put(torch.zeros(4, 6).to(dtype));
        muon.step();
        assertTrue(torch.isfinite(p.detach()).all().item_bool(), "a zero update made the parameter non-finite");
        double moved = p.detach().to(ScalarType.Double).sub(before.to(ScalarType.Double)).norm().item_double();
        assertTrue(moved <= 1e-2 * 1e3, "a zero update moved the parameter by " + moved);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void refusal_namesTheRule(String what, Executable call, String message) {
        assertEquals(message, assertThrows(IllegalArgumentException.class, call).getMessage());
    }

    @Test
    void aZeroNormParameter_isRefusedBeforeAnyOtherIsRescaled() {
        torch.manual_seed(6);
        Tensor first = torch.randn(4, 6).requires_grad_(true);
        Tensor before = first.detach().clone();
        List<Tensor> params = List.of(first, torch.zeros(3, 3).requires_grad_(true));
        assertThrows(IllegalArgumentException.class,
                () -> Muon.of(params, BASE.withHyperball(HyperballConfig.radius(2.0))));
        assertTrue(torch.equal(before, first.detach()), "the refused build rescaled a parameter");
    }

    @Test
    void checkpoint_carriesTheSetting_andALoadRequiresIt(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        torch.manual_seed(9);
        Tensor p = torch.randn(4, 6).requires_grad_(true);
        MuonConfig sphere = BASE.withNsPrecision(NsPrecision.FLOAT32).withHyperball(HyperballConfig.radius(2.0));
        Muon muon = Muon.of(List.of(p), sphere);
        p.mutable_grad().put(torch.randn(4, 6));
        muon.step();
        java.nio.file.Path file = dir.resolve("sphere.ckpt");
        muon.save(file);

        Tensor same = torch.randn(4, 6).requires_grad_(true);
        Muon resumed = Muon.of(List.of(same), sphere);
        resumed.load(file);
        assertTrue(torch.equal(p.detach(), same.detach()));
        assertEquals(sphere.hyperball(), resumed.config(0).hyperball());

        Muon plain = Muon.of(List.of(torch.randn(4, 6).requires_grad_(true)),
                BASE.withNsPrecision(NsPrecision.FLOAT32));
        dev.muon.state.StateMismatchException e = assertThrows(dev.muon.state.StateMismatchException.class,
                () -> plain.load(file));
        assertTrue(e.getMessage().contains("hyperball"), e.getMessage());
    }

    @Test
    void torchStateFile_carriesTheSetting_andAnImportRequiresIt(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        torch.manual_seed(10);
        MuonConfig sphere = BASE.withNsPrecision(NsPrecision.FLOAT32).withHyperball(HyperballConfig.defaults());
        Tensor p = torch.randn(4, 6).requires_grad_(true);
        Muon muon = Muon.of(List.of(p), sphere);
        p.mutable_grad().put(torch.randn(4, 6));
        muon.step();
        java.nio.file.Path file = dir.resolve("sphere.pt");
        muon.exportTorchStateDict(file);

        Muon same = Muon.of(List.of(torch.randn(4, 6).requires_grad_(true)), sphere);
        same.importTorchStateDict(file);
        assertTrue(torch.equal(muon.momentumBuffer(p).orElseThrow(),
                same.momentumBuffer(same.parameters(0).get(0)).orElseThrow()));

        Muon plain = Muon.of(List.of(torch.randn(4, 6).requires_grad_(true)),
                BASE.withNsPrecision(NsPrecision.FLOAT32));
        dev.muon.state.StateMismatchException e = assertThrows(dev.muon.state.StateMismatchException.class,
                () -> plain.importTorchStateDict(file));
        assertTrue(e.getMessage().contains("hyperball"), e.getMessage());
    }
}
