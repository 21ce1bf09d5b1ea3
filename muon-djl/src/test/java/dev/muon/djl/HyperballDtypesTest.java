package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.HyperballConfig;
import dev.muon.MuonConfig;
import dev.muon.StackedWeights;
import dev.muon.golden.Float64Update;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Arrays;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hyperball through muon-djl in each parameter dtype DJL trains in (float32, its default; float16; float64), through
 * {@link Muon} and {@link MuonAdamW}, against the float64 reference written from the formulas ({@link Float64Update})
 * started from the same rounded values and fed the same rounded gradients. Bfloat16 parameters are refused by
 * muon-djl as a whole ({@code DjlSupport}), with Hyperball as without it.
 */
class HyperballDtypesTest {
    private static final int STEPS = 4;
    private static final MuonConfig BASE = MuonConfig.defaults().withLr(0.05).withWeightDecay(0)
            .withStackedWeights(StackedWeights.BATCH);
    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    /**
     * A parameter dtype and its bound on the parameter's relative error after {@link #STEPS} steps.
     *
     * @param dtype     the parameters' (and so the gradients' and the momentum's) dtype
     * @param precision the Newton–Schulz precision the case runs at
     * @param bound     the relative bound: 1e-10 for the float64 iteration (the combination table's), the golden
     *                  README's 1e-5 for float32, and for float16 ten unit roundoffs (2^-11 each): the parameter,
     *                  the momentum and each factor are rounded to float16 at every step
     */
    record Dtype(DataType dtype, NsPrecision precision, double bound) {
        @Override
        public String toString() {
            return dtype.toString();
        }
    }

    private static final Dtype[] DTYPES = {
        new Dtype(DataType.FLOAT64, NsPrecision.FLOAT64, 1e-10),
        new Dtype(DataType.FLOAT32, NsPrecision.FLOAT32, 1e-5),
        new Dtype(DataType.FLOAT16, NsPrecision.FLOAT32, 10 * Math.scalb(1.0, -11)),
    };

    static Stream<Arguments> cases() {
        HyperballConfig own = HyperballConfig.defaults();
        Object[][] settings = {
            {"own norm", BASE.withHyperball(own), new long[]{6, 10}, 0},
            {"own norm, tall", BASE.withHyperball(own), new long[]{10, 4}, 0},
            {"fixed radius", BASE.withHyperball(HyperballConfig.radius(3.0)), new long[]{6, 10}, 0},
            {"eps 1e-3", BASE.withHyperball(new HyperballConfig(0, 1e-3)), new long[]{6, 10}, 0},
            {"with NorMuon", BASE.withNorMuon(0.9, 1e-8).withHyperball(own), new long[]{6, 10}, 0},
            {"a stack", BASE.withHyperball(own), new long[]{3, 4, 6}, 0},
            {"a zero gradient at step 2", BASE.withHyperball(own), new long[]{6, 10}, 2},
        };
        return Arrays.stream(DTYPES).flatMap(d -> Arrays.stream(settings).flatMap(s -> Stream.of(
                Arguments.of(d, "Muon", s[0], s[1], s[2], s[3]),
                Arguments.of(d, "MuonAdamW", s[0], s[1], s[2], s[3]))));
    }

    @ParameterizedTest(name = "{0}, {1}: {2}")
    @MethodSource("cases")
    void hyperball_matchesTheFloat64Reference(Dtype d, String kind, String name, MuonConfig setting,
                                              long[] shape, int zeroAt) {
        MuonConfig config = setting.withNsPrecision(d.precision());
        Random random = new Random(name.hashCode());
        int k = shape.length == 3 ? (int) shape[0] : 1;
        int m = (int) shape[shape.length - 2];
        try (NDManager scope = manager.get().newSubManager()) {
            NDArray weight = scope.create(Float64Update.gaussian(random, shape), new Shape(shape))
                    .toType(d.dtype(), false);
            Float64Update reference = new Float64Update(Measures.values(weight), k, m, null, config);
            ParamBlock block = new ParamBlock().param("hidden", weight);
            ai.djl.training.optimizer.Optimizer optimizer = kind.equals("Muon")
                    ? Muon.builder().optBlock(block).optConfig(config).build()
                    : MuonAdamW.builder().optBlock(block).optMuon(config).optForceMuon("hidden").build();
            double rescale = Measures.relativeError(Measures.values(weight), reference.p);
            assertTrue(rescale <= d.bound(), "the build's rescale differs from the reference's by " + rescale);
            String id = block.getParameters().get(0).getValue().getId();
            for (int step = 1; step <= STEPS; step++) {
                double[] g = step == zeroAt ? new double[reference.p.length] : Float64Update.gaussian(random, shape);
                NDArray grad = scope.create(g, new Shape(shape)).toType(d.dtype(), false);
                reference.step(Measures.values(grad));
                optimizer.update(id, weight, grad);
            }
            assertEquals(d.dtype(), weight.getDataType(), "the parameter keeps its dtype");
            double error = Measures.relativeError(Measures.values(weight), reference.p);
            assertTrue(error <= d.bound(), d + " " + kind + " " + name + ": parameter rel error " + error);
        }
    }

    @Test
    void float32_staysOnTheSphereOverManySteps() {
        assertStaysOnTheSphere(new Random(3), new long[]{16, 24}, HyperballConfig.radius(5), 50, 5e-5);
    }

    /**
     * Draws a float32 parameter of {@code shape}, then steps {@code hyperball}'s Muon on it with {@code steps} random
     * float32 gradients and checks after each that its norm is the radius within {@code tolerance}.
     */
    private static void assertStaysOnTheSphere(Random random, long[] shape, HyperballConfig hyperball, int steps,
                                               double tolerance) {
        try (NDManager scope = manager.get().newSubManager()) {
            NDArray weight = scope.create(Float64Update.gaussian(random, shape), new Shape(shape))
                    .toType(DataType.FLOAT32, false);
            ParamBlock block = new ParamBlock().param("hidden", weight);
            Muon muon = Muon.builder().optBlock(block).optConfig(BASE.withHyperball(hyperball)).build();
            String id = block.getParameters().get(0).getValue().getId();
            for (int step = 0; step < steps; step++) {
                muon.update(id, weight, scope.create(Float64Update.gaussian(random, shape), new Shape(shape))
                        .toType(DataType.FLOAT32, false));
                double norm = Math.sqrt(Arrays.stream(Measures.values(weight)).map(v -> v * v).sum());
                assertEquals(hyperball.radius(), norm, tolerance, "step " + step + ": the norm left the sphere");
            }
        }
    }

    /** Settings the parameter's dtype cannot hold: refused at build with muon-core's message, nothing changed. */
    static Stream<Arguments> dtypeRefusals() {
        return Stream.of(
                Arguments.of("eps 1e-300, float32", DataType.FLOAT32, new HyperballConfig(0, 1e-300),
                        "hyperball eps must be a normal float32 number (1.17549435E-38 to 3.4028235E38) where the "
                                + "norms are float32, as they are for parameter 'hidden' of dtype float32, "
                                + "got 1.0E-300"),
                Arguments.of("radius 1e39, float32", DataType.FLOAT32, HyperballConfig.radius(1e39),
                        "hyperball radius must keep every value of parameter 'hidden' finite in its dtype float32 "
                                + "(at most 3.4028234663852886E38; rescaled to this radius its largest value would be "),
                Arguments.of("radius 1e6, float16", DataType.FLOAT16, HyperballConfig.radius(1e6),
                        "hyperball radius must keep every value of parameter 'hidden' finite in its dtype float16 "
                                + "(at most 65504.0; rescaled to this radius its largest value would be "));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dtypeRefusals")
    void aSettingTheDtypeCannotHold_isRefusedAtBuild_andChangesNothing(String what, DataType dtype,
                                                                        HyperballConfig hyperball, String message) {
        try (NDManager scope = manager.get().newSubManager()) {
            NDArray weight = scope.create(Float64Update.gaussian(new Random(12), new long[]{4, 6}), new Shape(4, 6))
                    .toType(dtype, false);
            double[] before = Measures.values(weight);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Muon.builder()
                    .optBlock(new ParamBlock().param("hidden", weight)).optConfig(BASE.withHyperball(hyperball))
                    .build());
            assertTrue(e.getMessage().startsWith(message), e.getMessage());
            assertTrue(Arrays.equals(before, Measures.values(weight)), "the refused build changed the parameter");
        }
    }

    /** A fixed radius whose float32 sum of squares overflows, or whose squares underflow: norms in float64. */
    @ParameterizedTest(name = "radius {0}")
    @org.junit.jupiter.params.provider.ValueSource(doubles = {2e19, 1e30, 1e-25})
    void anExtremeRadius_keepsAFloat32ParameterOnItsSphere(double radius) {
        assertStaysOnTheSphere(new Random(14), new long[]{6, 10},
                new HyperballConfig(radius, Math.min(1e-8, radius * 1e-10)), 3, 1e-5 * radius);
    }

    /** A zero update where lr·R/eps is beyond float32's range: the factor is clamped, the parameter stays finite. */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(value = DataType.class, names = {"FLOAT32", "FLOAT16"})
    void aZeroUpdate_withAFactorBeyondTheDtype_leavesTheParameter(DataType dtype) {
        long[] shape = {4, 6};
        try (NDManager scope = manager.get().newSubManager()) {
            NDArray weight = scope.create(Float64Update.gaussian(new Random(15), shape), new Shape(shape))
                    .toType(dtype, false);
            ParamBlock block = new ParamBlock().param("hidden", weight);
            Muon muon = Muon.builder().optBlock(block).optConfig(BASE.withMomentum(0)
                    .withHyperball(new HyperballConfig(1e3, Float.MIN_NORMAL))).build();
            double[] before = Measures.values(weight);
            muon.update(block.getParameters().get(0).getValue().getId(), weight, scope.zeros(new Shape(shape), dtype));
            // Measures.values of a non-finite array fails in relativeError's check.
            double moved = Measures.relativeError(Measures.values(weight), before);
            assertTrue(moved <= 1e-2, "a zero update moved the parameter by " + moved);
        }
    }

    @Test
    void bfloat16Parameters_areRefusedAtBuild_withHyperballAsWithout() {
        // DJL 0.36.0 aborts the JVM when it creates a bfloat16 array, from a buffer or by conversion, so the refusal
        // is checked on its rule.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DjlSupport.requireSupported(DataType.BFLOAT16, "parameter 'hidden'"));
        assertEquals("muon-djl does not update bfloat16 parameters (DJL's bfloat16 conversions abort the JVM); "
                + "parameter 'hidden' has dtype bfloat16", e.getMessage());
    }
}
