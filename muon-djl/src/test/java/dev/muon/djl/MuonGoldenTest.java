package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.muon.MuonConfig;
import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;

import static dev.muon.golden.ErrorMeasures.minus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replays every {@code muon_*} golden trajectory (PyTorch's Muon, computed in float64) through {@link Muon}, with
 * the parameters handed over in a new random order at every step as DJL's hash order would, and checks per step
 * the momentum buffer, the orthogonalized update and the parameter, then the displacement.
 *
 * <p>The update {@code O} is recovered from the parameter change, {@code O = (p_{k−1}·(1 − lr·wd) − p_k) /
 * (lr·ratio)}, in float64, as muon-core's MuonGoldenTest does.
 */
class MuonGoldenTest {

    static Stream<Arguments> cases() {
        return GoldenReader.casesWith("muon_", GoldenPrecision.FLOAT64, GoldenPrecision.FLOAT32);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void trajectory_matchesGolden_inAnyCallOrder(GoldenCase c, GoldenPrecision precision) {
        try (NDManager manager = NDManager.newBaseManager()) {
            MuonConfig config = GoldenConfigs.muon(c, precision.ns());
            ParamBlock block = new ParamBlock();
            Map<String, NDArray> params = new LinkedHashMap<>();
            for (GoldenCase.Param p : c.params()) {
                NDArray array = manager.create(c.tensor("param", p.name(), 0).data(), new Shape(p.shape()))
                        .toType(precision.dtype(), false);
                params.put(p.name(), array);
                block.param(p.name(), array);
            }
            Muon muon = Muon.builder().optBlock(block).optConfig(config).build();
            Map<String, String> ids = new LinkedHashMap<>();
            block.getParameters().forEach(pair -> ids.put(pair.getKey(), pair.getValue().getId()));
            Random order = new Random(c.name().hashCode());
            int steps = c.integer("num_steps");
            for (int k = 1; k <= steps; k++) {
                Map<String, double[]> before = new LinkedHashMap<>();
                params.forEach((name, array) -> before.put(name, Measures.values(array)));
                List<GoldenCase.Param> shuffled = new ArrayList<>(c.params());
                Collections.shuffle(shuffled, order);
                for (GoldenCase.Param p : shuffled) {
                    NDArray grad = manager.create(c.tensor("grad", p.name(), k).data(), new Shape(p.shape()))
                            .toType(precision.dtype(), false);
                    muon.update(ids.get(p.name()), params.get(p.name()), grad);
                }
                assertEquals(k, muon.stepCount());
                for (GoldenCase.Param p : c.params()) {
                    String where = c.name() + " " + precision + " step " + k + " " + p.name();
                    double bufferError = Measures.relativeError(
                            Measures.values(muon.momentumBuffer(p.name(), Device.cpu()).orElseThrow()),
                            c.tensor("momentum_buffer", p.name(), k).data());
                    assertTrue(bufferError <= precision.stateRel(), where + ": momentum_buffer rel error "
                            + bufferError);
                    double[] after = Measures.values(params.get(p.name()));
                    double updateError = Measures.relativeError(recoveredUpdate(before.get(p.name()), after, config,
                            p.shape()), c.tensor("orthogonalized_update", p.name(), k).data());
                    assertTrue(updateError <= precision.updateRel(), where + ": orthogonalized_update rel error "
                            + updateError);
                    double paramError = Measures.maxAbsError(after, c.tensor("param", p.name(), k).data());
                    assertTrue(paramError <= precision.paramAbs(), where + ": param abs error " + paramError);
                }
            }
            for (GoldenCase.Param p : c.params()) {
                double[] start = c.tensor("param", p.name(), 0).data();
                double error = Measures.relativeError(minus(Measures.values(params.get(p.name())), start),
                        minus(c.tensor("param", p.name(), steps).data(), start));
                assertTrue(error <= precision.displacementRel(), c.name() + " " + precision + " " + p.name()
                        + ": displacement rel error " + error);
            }
        }
    }

    static double[] recoveredUpdate(double[] before, double[] after, MuonConfig config, long[] shape) {
        double decay = 1 - config.lr() * config.weightDecay();
        double scaledLr = config.scaledLr(shape[0], shape[1]);
        double[] o = new double[before.length];
        for (int j = 0; j < o.length; j++) {
            o[j] = (before[j] * decay - after[j]) / scaledLr;
        }
        return o;
    }
}
