package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.MuonConfig;
import dev.muon.UpdateFloorConfig;
import dev.muon.golden.Float64Update;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The update floor's meaning through muon-djl, measured on the parameter, in each dtype DJL trains in (float32, its
 * default; float16; float64): a floor that binds makes the step {@code lr·floor·‖p₀‖}, whole or per row, so it
 * doubles with the lr; through {@link Muon} and {@link MuonAdamW}.
 */
class UpdateFloorDtypesTest {
    private static final int ROWS = 8;
    private static final int COLS = 12;
    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    /** Each dtype with the relative bound on a step's norm (float16 rounds the factor and each value to 11 bits). */
    static Stream<Arguments> cases() {
        return Stream.of(DataType.FLOAT64, DataType.FLOAT32, DataType.FLOAT16).flatMap(d -> Stream.of(
                Arguments.of(d, d == DataType.FLOAT16 ? 2e-2 : d == DataType.FLOAT32 ? 1e-5 : 1e-12, "Muon"),
                Arguments.of(d, d == DataType.FLOAT16 ? 2e-2 : d == DataType.FLOAT32 ? 1e-5 : 1e-12, "MuonAdamW")));
    }

    @ParameterizedTest(name = "{0}, {2}")
    @MethodSource("cases")
    void aBindingFloor_makesTheStepLrTimesFloorTimesTheWeightsNorm(DataType dtype, double bound, String kind) {
        for (double lr : new double[] {0.1, 0.2}) {
            double[][] p = step(dtype, lr, kind, false);
            double expected = lr * 0.35 * norm(p[0], 0, p[0].length);
            assertEquals(expected, norm(difference(p), 0, p[0].length), bound * expected, dtype + " at lr " + lr);
        }
    }

    @ParameterizedTest(name = "{0}, {2}")
    @MethodSource("cases")
    void aBindingFloorPerRow_makesEachRowsStepLrTimesFloorTimesItsNorm(DataType dtype, double bound, String kind) {
        double lr = 0.2;
        double[][] p = step(dtype, lr, kind, true);
        double[] d = difference(p);
        for (int i = 0; i < ROWS; i++) {
            double expected = lr * 0.35 * norm(p[0], i * COLS, COLS);
            assertEquals(expected, norm(d, i * COLS, COLS), bound * expected, dtype + " row " + i);
        }
    }

    /** One step of a floored optimizer on a weight of norm about 98: the parameter's values before and after. */
    private static double[][] step(DataType dtype, double lr, String kind, boolean perRow) {
        Random random = new Random(kind.hashCode() + (perRow ? 1 : 0));
        Shape shape = new Shape(ROWS, COLS);
        try (NDManager scope = manager.get().newSubManager()) {
            double[] values = Float64Update.gaussian(random, new long[] {ROWS, COLS});
            for (int e = 0; e < values.length; e++) {
                values[e] *= 10;
            }
            NDArray weight = scope.create(values, shape).toType(dtype, false);
            // A float64 parameter iterates in float64 too: its O, and so the factor rounded to O's dtype, stay float64.
            MuonConfig config = MuonConfig.defaults().withLr(lr).withWeightDecay(0)
                    .withNsPrecision(dtype == DataType.FLOAT64 ? NsPrecision.FLOAT64 : NsPrecision.FLOAT32)
                    .withUpdateFloor(UpdateFloorConfig.defaults().withPerRow(perRow));
            ParamBlock block = new ParamBlock().param("hidden", weight);
            ai.djl.training.optimizer.Optimizer optimizer = kind.equals("Muon")
                    ? Muon.builder().optBlock(block).optConfig(config).build()
                    : MuonAdamW.builder().optBlock(block).optMuon(config).optForceMuon("hidden").build();
            double[] before = Measures.values(weight);
            NDArray grad = scope.create(Float64Update.gaussian(random, new long[] {ROWS, COLS}), shape)
                    .toType(dtype, false);
            optimizer.update(block.getParameters().get(0).getValue().getId(), weight, grad);
            return new double[][] {before, Measures.values(weight)};
        }
    }

    private static double[] difference(double[][] p) {
        double[] d = new double[p[0].length];
        for (int e = 0; e < d.length; e++) {
            d[e] = p[1][e] - p[0][e];
        }
        return d;
    }

    private static double norm(double[] v, int start, int length) {
        double sum = 0;
        for (int e = start; e < start + length; e++) {
            sum += v[e] * v[e];
        }
        return Math.sqrt(sum);
    }
}
