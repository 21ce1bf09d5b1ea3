package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.ConvWeights;
import dev.muon.HyperballConfig;
import dev.muon.MuownConfig;
import dev.muon.MomentumPrecision;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.Orthogonalization;
import dev.muon.RadialBrakeConfig;
import dev.muon.RelativeUpdateConfig;
import dev.muon.StackedWeights;
import dev.muon.UpdateFloorConfig;
import dev.muon.golden.Float64Update;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.NsPreconditioning;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every field of {@link MuonConfig} (its Newton–Schulz fields one by one), {@link NorMuonConfig} and
 * {@link AdamWConfig} through muon-djl: each value either gives what the float64 reference written from the
 * formulas gives ({@link Float64Update} for Muon, PyTorch's AdamW for AdamW), or is refused when the optimizer is
 * built, with a message that names the setting. No value is accepted and ignored. A field added to a config fails
 * {@link #everyField_hasARow()} until it has rows here.
 */
class ConfigFieldWalkTest {
    /** Newton–Schulz in float64 on float64 parameters: the combination table's bound. */
    private static final double FLOAT64_REL = 1e-10;
    /** The golden README's float32 bound on an update, as many steps. */
    private static final double FLOAT32_REL = 1e-5;
    private static final int STEPS = 3;
    /** The walk's base: float64 iterations, so that a difference of one setting is far above the rounding. */
    private static final MuonConfig BASE = MuonConfig.defaults().withLr(0.05).withWeightDecay(0.2)
            .withNsPrecision(NsPrecision.FLOAT64);
    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    /**
     * One value of one field.
     *
     * @param field     the field, {@code outer.inner} for a nested config's
     * @param change    the config with the value set
     * @param refusal   the message the build must throw, or null when the value runs
     * @param tolerance the relative bound against the reference when it runs
     */
    record Row(String field, String value, UnaryOperator<MuonConfig> change, String refusal, double tolerance) {
        @Override
        public String toString() {
            return field + " = " + value;
        }
    }

    /** A value that runs and matches the reference in float64. */
    private static Row runs(String field, String value, UnaryOperator<MuonConfig> change) {
        return new Row(field, value, change, null, FLOAT64_REL);
    }

    private static Row refused(String field, String value, UnaryOperator<MuonConfig> change, String message) {
        return new Row(field, value, change, message, 0);
    }

    static List<Row> muonRows() {
        List<Row> rows = new ArrayList<>();
        rows.add(runs("lr", "0.01", c -> c.withLr(0.01)));
        rows.add(runs("weightDecay", "0", c -> c.withWeightDecay(0)));
        rows.add(runs("momentum", "0.5", c -> c.withMomentum(0.5)));
        rows.add(runs("momentum", "0", c -> c.withMomentum(0)));
        rows.add(runs("nesterov", "false", c -> c.withNesterov(false)));
        rows.add(runs("newtonSchulz.nsCoefficients", "polarExpress5",
                c -> c.withNsCoefficients(CoefficientSchedule.polarExpress5())));
        rows.add(runs("newtonSchulz.nsSteps", "3", c -> c.withNsSteps(3)));
        rows.add(runs("newtonSchulz.eps", "1e-3", c -> c.withEps(1e-3)));
        rows.add(new Row("newtonSchulz.nsPrecision", "FLOAT32", c -> c.withNsPrecision(NsPrecision.FLOAT32), null,
                FLOAT32_REL));
        rows.add(runs("newtonSchulz.nsPrecision", "FLOAT64", c -> c.withNsPrecision(NsPrecision.FLOAT64)));
        rows.add(refused("newtonSchulz.nsPrecision", "BFLOAT16", c -> c.withNsPrecision(NsPrecision.BFLOAT16),
                "nsPrecision = BFLOAT16 is not supported by muon-djl: DJL's conversion to bfloat16 aborts the JVM, "
                        + "so Newton-Schulz runs in float32 (the default) or FLOAT64"));
        rows.add(runs("newtonSchulz.nsAlgorithm", "AUTO", c -> c.withNsAlgorithm(NsAlgorithm.AUTO)));
        rows.add(runs("newtonSchulz.nsAlgorithm", "GEMM", c -> c.withNsAlgorithm(NsAlgorithm.GEMM)));
        // muon-core's native symmetric and Gram kernels are float32 only: in this walk's float64 iteration they are
        // refused.
        rows.add(new Row("newtonSchulz.nsAlgorithm", "SYMMETRIC (float32)", c -> c.withNsAlgorithm(
                NsAlgorithm.SYMMETRIC).withNsPrecision(NsPrecision.FLOAT32), null, FLOAT32_REL));
        rows.add(refused("newtonSchulz.nsAlgorithm", "SYMMETRIC", c -> c.withNsAlgorithm(NsAlgorithm.SYMMETRIC),
                "nsAlgorithm = SYMMETRIC is not supported by muon-djl with nsPrecision = FLOAT64: its symmetric kernel "
                        + "is muon-core's native float32 one (use FLOAT32, or AUTO or GEMM)"));
        rows.add(new Row("newtonSchulz.nsAlgorithm", "GRAM (float32)", c -> c.withNsAlgorithm(
                NsAlgorithm.GRAM).withNsPrecision(NsPrecision.FLOAT32), null, FLOAT32_REL));
        rows.add(refused("newtonSchulz.nsAlgorithm", "GRAM", c -> c.withNsAlgorithm(NsAlgorithm.GRAM),
                "nsAlgorithm = GRAM is not supported by muon-djl with nsPrecision = FLOAT64: its Gram kernel "
                        + "is muon-core's native float32 one (use FLOAT32, or AUTO or GEMM)"));
        rows.add(runs("newtonSchulz.nsPreconditioning", "FROBENIUS",
                c -> c.withNsPreconditioning(NsPreconditioning.FROBENIUS)));
        // AOL on DJL's arrays (the float64 iteration) and on muon-core's native float32 kernels (AUTO in float32).
        rows.add(runs("newtonSchulz.nsPreconditioning", "AOL", MuonConfig::withAol));
        rows.add(new Row("newtonSchulz.nsPreconditioning", "AOL (float32)", c -> c.withAol()
                .withNsPrecision(NsPrecision.FLOAT32), null, FLOAT32_REL));
        for (AdjustLr adjust : AdjustLr.values()) {
            rows.add(runs("adjustLr", adjust.name(), c -> c.withAdjustLr(adjust)));
        }
        rows.add(runs("extraScale", "2.5", c -> c.withExtraScale(2.5)));
        for (ConvWeights conv : ConvWeights.values()) {
            rows.add(runs("convWeights", conv.name(), c -> c.withConvWeights(conv)));
        }
        for (StackedWeights stacked : StackedWeights.values()) {
            rows.add(runs("stackedWeights", stacked.name(), c -> c.withStackedWeights(stacked)));
        }
        rows.add(runs("orthogonalization", "NEWTON_SCHULZ",
                c -> c.withOrthogonalization(Orthogonalization.NEWTON_SCHULZ)));
        rows.add(refused("orthogonalization", "EXACT_SVD", c -> c.withOrthogonalization(Orthogonalization.EXACT_SVD),
                "orthogonalization = EXACT_SVD is not supported by muon-djl: DJL's NDArray API has no SVD"));
        // DJL hands parameters over one at a time: batching is never possible, and changes only rounding anyway.
        rows.add(runs("batchSameShape", "false", c -> c.withBatchSameShape(false)));
        rows.add(runs("norMuon", "defaults", c -> c.withNorMuon(NorMuonConfig.defaults())));
        rows.add(runs("norMuon.beta2", "0.5", c -> c.withNorMuon(0.5, NorMuonConfig.defaults().eps())));
        rows.add(runs("norMuon.eps", "1e-3", c -> c.withNorMuon(NorMuonConfig.defaults().beta2(), 1e-3)));
        rows.add(runs("cautiousWeightDecay", "true", c -> c.withCautiousWeightDecay(true)));
        rows.add(runs("hyperball", "defaults", c -> c.withWeightDecay(0).withHyperball(HyperballConfig.defaults())));
        rows.add(runs("hyperball.radius", "3.0", c -> c.withWeightDecay(0).withHyperball(HyperballConfig.radius(3))));
        rows.add(runs("hyperball.eps", "1e-3", c -> c.withWeightDecay(0).withHyperball(new HyperballConfig(0, 1e-3))));
        rows.add(runs("radialBrake", "defaults", c -> c.withRadialBrake(RadialBrakeConfig.defaults())));
        rows.add(runs("radialBrake.outwardScale", "0.25", c -> c.withRadialBrake(new RadialBrakeConfig(0.25, 1,
                1e-12))));
        rows.add(runs("radialBrake.inwardScale", "0.5", c -> c.withRadialBrake(new RadialBrakeConfig(0.5, 0.5,
                1e-12))));
        rows.add(runs("radialBrake.eps", "1e-3", c -> c.withRadialBrake(new RadialBrakeConfig(0.5, 1, 1e-3))));
        rows.add(runs("relativeUpdate", "defaults", c -> c.withRelativeUpdate(RelativeUpdateConfig.defaults())));
        rows.add(runs("relativeUpdate.eps", "1e-3", c -> c.withRelativeUpdate(new RelativeUpdateConfig(1e-3))));
        rows.add(runs("updateFloor", "defaults", c -> c.withUpdateFloor(UpdateFloorConfig.defaults())));
        rows.add(runs("updateFloor.floor", "0.05", c -> c.withUpdateFloor(new UpdateFloorConfig(0.05, false,
                1e-12))));
        rows.add(runs("updateFloor.perRow", "true", c -> c.withUpdateFloor(UpdateFloorConfig.defaults()
                .withPerRow(true))));
        rows.add(runs("updateFloor.eps", "1e-3", c -> c.withUpdateFloor(new UpdateFloorConfig(0.35, false, 1e-3))));
        String muown = "muown = on is not supported by muon-djl: muon-djl has no mapping of Muown's row magnitudes, "
                + "their Adam moments and the direction's own gradient; muon-core runs it";
        rows.add(refused("muown", "defaults", c -> c.withNesterov(false).withMuown(MuownConfig.defaults()), muown));
        rows.add(refused("muown.beta1", "0.5", c -> c.withNesterov(false).withMuown(new MuownConfig(0.5, 0.95,
                1e-8)), muown));
        rows.add(refused("muown.beta2", "0.5", c -> c.withNesterov(false).withMuown(new MuownConfig(0.9, 0.5,
                1e-8)), muown));
        rows.add(refused("muown.adamEps", "1e-3", c -> c.withNesterov(false).withMuown(new MuownConfig(0.9, 0.95,
                1e-3)), muown));
        rows.add(runs("momentumPrecision", "PARAMETER", c -> c.withMomentumPrecision(MomentumPrecision.PARAMETER)));
        rows.add(refused("momentumPrecision", "BFLOAT16", c -> c.withMomentumPrecision(MomentumPrecision.BFLOAT16),
                "momentumPrecision = BFLOAT16 is not supported by muon-djl: DJL's bfloat16 arrays abort the JVM, so "
                        + "the momentum buffer cannot be stored in bfloat16"));
        return rows;
    }

    /** The AdamW fields, each run through {@link MuonAdamW}'s AdamW group. */
    static List<String> adamWFields() {
        return List.of("lr", "beta1", "beta2", "eps", "weightDecay");
    }

    @Test
    void everyField_hasARow() {
        Set<String> rows = muonRows().stream().map(Row::field).collect(Collectors.toCollection(TreeSet::new));
        adamWFields().forEach(f -> rows.add("adamW." + f));
        Set<String> fields = new TreeSet<>();
        collect(MuonConfig.class, "", fields);
        collect(AdamWConfig.class, "adamW.", fields);
        assertEquals(fields, rows, "every configuration field must have a row in this walk");
    }

    /**
     * The field names of a record: the Newton–Schulz settings' as {@code newtonSchulz.inner}, and a nested settings
     * record's (NorMuon's, a variant's: null when off) whole and as {@code outer.inner}.
     */
    private static void collect(Class<?> type, String prefix, Set<String> out) {
        for (RecordComponent c : type.getRecordComponents()) {
            Class<?> t = c.getType();
            if (t == NewtonSchulzConfig.class) {
                collect(t, prefix + c.getName() + ".", out);
            } else if (t.isRecord() && t.getSimpleName().endsWith("Config")) {
                out.add(prefix + c.getName());
                collect(t, prefix + c.getName() + ".", out);
            } else {
                out.add(prefix + c.getName());
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("muonRows")
    void muonField_runsAsTheReferenceOrIsRefused(Row row) {
        MuonConfig config = row.change().apply(BASE);
        if (row.refusal() != null) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Muon.builder().optBlock(new ParamBlock().param("w", manager.get().ones(new Shape(4, 6))))
                            .optConfig(config).build());
            assertEquals(row.refusal(), e.getMessage());
            return;
        }
        // A conv filter or a stack when the setting takes one, else a matrix.
        long[] shape = config.convWeights() == ConvWeights.FLATTEN ? new long[]{4, 2, 1, 3}
                : config.stackedWeights() == StackedWeights.BATCH ? new long[]{2, 4, 6} : new long[]{4, 6};
        int k = shape.length == 3 ? 2 : 1;
        Random random = new Random(row.toString().hashCode());
        double[] values = Float64Update.gaussian(random, shape);
        Float64Update reference = new Float64Update(values, k, 4, null, config);
        double[] got = MuonReferenceRun.run(manager.get(), config, values, shape, random, STEPS, reference::step);
        double error = Measures.relativeError(got, reference.p);
        assertTrue(error <= row.tolerance(), row + ": parameter rel error " + error);
    }

    @ParameterizedTest(name = "adamW.{0}")
    @MethodSource("adamWFields")
    void adamWField_runsAsTheReference(String field) {
        AdamWConfig base = AdamWConfig.defaults();
        AdamWConfig config = switch (field) {
            case "lr" -> base.withLr(0.02);
            case "beta1" -> base.withBetas(0.5, base.beta2());
            case "beta2" -> base.withBetas(base.beta1(), 0.9);
            case "eps" -> base.withEps(0.1);
            case "weightDecay" -> base.withWeightDecay(0.3);
            default -> throw new IllegalArgumentException("no value for AdamW field " + field);
        };
        Random random = new Random(field.hashCode());
        long[] shape = {6};
        double[] values = Float64Update.gaussian(random, shape);
        double[] p = values.clone();
        double[] m = new double[p.length];
        double[] v = new double[p.length];
        try (NDManager scope = manager.get().newSubManager()) {
            NDArray bias = scope.create(values, new Shape(shape));
            NDArray matrix = scope.create(Float64Update.gaussian(random, new long[]{4, 6}), new Shape(4, 6));
            ParamBlock block = new ParamBlock().param("hidden", matrix).param("bias", bias);
            MuonAdamW optimizer = MuonAdamW.builder().optBlock(block).optMuon(BASE).optAdamW(config)
                    .optOutputLayerOnAdamW(false).build();
            String id = block.getParameters().get(1).getValue().getId();
            for (int t = 1; t <= STEPS; t++) {
                double[] g = Float64Update.gaussian(random, shape);
                adamW(p, m, v, g, config, t);
                optimizer.update(id, bias, scope.create(g, new Shape(shape)));
            }
            double error = Measures.relativeError(bias.toDoubleArray(), p);
            assertTrue(error <= FLOAT64_REL, "adamW." + field + ": parameter rel error " + error);
        }
    }

    /** PyTorch's AdamW, float64: decoupled decay, bias-corrected moments, eps added to the corrected root. */
    private static void adamW(double[] p, double[] m, double[] v, double[] g, AdamWConfig c, int t) {
        double correction1 = 1 - Math.pow(c.beta1(), t);
        double correction2 = 1 - Math.pow(c.beta2(), t);
        for (int i = 0; i < p.length; i++) {
            p[i] *= 1 - c.lr() * c.weightDecay();
            m[i] = c.beta1() * m[i] + (1 - c.beta1()) * g[i];
            v[i] = c.beta2() * v[i] + (1 - c.beta2()) * g[i] * g[i];
            p[i] -= c.lr() / correction1 * m[i] / (Math.sqrt(v[i]) / Math.sqrt(correction2) + c.eps());
        }
    }
}
