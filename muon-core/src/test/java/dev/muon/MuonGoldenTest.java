package dev.muon;

import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static dev.muon.golden.ErrorMeasures.minus;
import static dev.muon.golden.ErrorMeasures.recoveredUpdate;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replays every {@code muon_*} golden trajectory through {@link Muon} and checks, per step, the momentum buffer,
 * the orthogonalized update and the parameter, with the tolerances of {@code shared/golden/README.md}.
 *
 * <p>The update {@code O} is not exposed by the optimizer; it is recovered from the parameter change,
 * {@code O = (p_{k−1}·(1 − lr·wd) − p_k) / (lr·ratio)}, computed in float64. That adds at most a few ulps of
 * {@code p} divided by {@code lr·ratio} (≈ 3e-15 in float64, ≈ 3e-6 in float32), well inside each tolerance.
 */
class MuonGoldenTest {

    /** One precision setting: parameter dtype, NS precision and its tolerances. */
    record Precision(String label, ScalarType paramType, NsPrecision ns, double paramAbs, double displacementRel,
                     double updateRel, double stateRel) {
        /** The absolute tolerance on a parameter after {@code steps} steps: {@code paramAbs}, or 0.2·lr·steps. */
        double paramTolerance(MuonConfig config, int steps) {
            return Double.isNaN(paramAbs) ? 0.2 * config.lr() * steps : paramAbs;
        }

        @Override
        public String toString() {
            return label;
        }
    }

    static final Precision FLOAT64 = new Precision("float64", ScalarType.Double, NsPrecision.FLOAT64,
            1e-12, 1e-12, 1e-12, 1e-12);
    static final Precision FLOAT32 = new Precision("float32", ScalarType.Float, NsPrecision.FLOAT32,
            1e-5, 1e-4, 1e-5, 1e-5);
    // bfloat16 NS with float32 state, a coarse smoke test. README: 0.25 rel on O, 0.2·lr·steps absolute on p
    // (NaN here: derived from the lr). The displacement is lr-weighted sum of the steps' O, each within 0.25 rel,
    // so it gets the same 0.25; the buffers never pass through bfloat16 and keep the float32 tolerance.
    static final Precision BF16_NS = new Precision("bf16-ns", ScalarType.Float, NsPrecision.BFLOAT16,
            Double.NaN, 0.25, 0.25, 1e-5);

    static Stream<Arguments> cases() {
        return GoldenReader.casesWith("muon_", FLOAT64, FLOAT32, BF16_NS);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void trajectory_matchesGolden(GoldenCase c, Precision precision) {
        replay(c, precision, 1);
    }

    /**
     * The same trajectories with every golden parameter given three times: each shape then forms a same-shape
     * batch ({@link Muon#BATCH_MAX_SIDE}), and every copy must still follow the golden values.
     */
    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void trajectory_sameShapeBatched_matchesGolden(GoldenCase c, Precision precision) {
        replay(c, precision, 3);
    }

    private static void replay(GoldenCase c, Precision precision, int copies) {
        try (PointerScope scope = new PointerScope()) {
            MuonConfig config = GoldenConfigs.muon(c, precision.ns());
            List<Tensor> params = new ArrayList<>();
            // golden.get(i) is the golden parameter that params.get(i) replays: the copies come set after set.
            List<GoldenCase.Param> golden = new ArrayList<>();
            for (int copy = 0; copy < copies; copy++) {
                for (GoldenCase.Param p : c.params()) {
                    params.add(Tensors.of(c.tensor("param", p.name(), 0), precision.paramType())
                            .requires_grad_(true));
                    golden.add(p);
                }
            }
            Muon muon = Muon.of(params, config);
            boolean batched = copies >= Muon.BATCH_MIN_PARAMETERS;
            assertEquals(batched, !muon.sameShapeBatches(0).isEmpty());
            int steps = c.integer("num_steps");
            double paramTolerance = precision.paramTolerance(config, steps);

            for (int k = 1; k <= steps; k++) {
                List<double[]> before = new ArrayList<>();
                for (int i = 0; i < params.size(); i++) {
                    before.add(Tensors.values(params.get(i)));
                    GoldenCase.Param p = golden.get(i);
                    params.get(i).mutable_grad().put(Tensors.of(c.tensor("grad", p.name(), k), precision.paramType()));
                }
                muon.step();
                assertEquals(batched ? params.size() : 0, muon.batchedLastStep());
                for (int i = 0; i < params.size(); i++) {
                    GoldenCase.Param p = golden.get(i);
                    String where = c.name() + " " + precision + " step " + k + " " + p.name() + " copy "
                            + i / c.params().size();
                    Tensor param = params.get(i);

                    double bufferError = Tensors.relativeError(muon.momentumBuffer(param).orElseThrow(),
                            c.tensor("momentum_buffer", p.name(), k).data());
                    assertTrue(bufferError <= precision.stateRel(),
                            where + ": momentum_buffer rel error " + bufferError);

                    double[] update = recoveredUpdate(before.get(i), Tensors.values(param), config, p.shape());
                    double updateError = Tensors.relativeError(update,
                            c.tensor("orthogonalized_update", p.name(), k).data());
                    assertTrue(updateError <= precision.updateRel(),
                            where + ": orthogonalized_update rel error " + updateError);

                    double paramError = Tensors.maxAbsError(param, c.tensor("param", p.name(), k).data());
                    assertTrue(paramError <= paramTolerance, where + ": param abs error " + paramError);
                }
            }
            for (int i = 0; i < params.size(); i++) {
                GoldenCase.Param p = golden.get(i);
                double[] start = c.tensor("param", p.name(), 0).data();
                double[] expected = c.tensor("param", p.name(), steps).data();
                double[] got = Tensors.values(params.get(i));
                double displacementError = Tensors.relativeError(minus(got, start), minus(expected, start));
                assertTrue(displacementError <= precision.displacementRel(), c.name() + " " + precision + " "
                        + p.name() + ": displacement rel error " + displacementError);
            }
        }
    }
}
