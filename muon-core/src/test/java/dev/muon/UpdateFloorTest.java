package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The update floor's meaning, measured on the parameter rather than against a reference written from the same
 * formula: a floor that binds makes the step exactly {@code lr·floor·‖p₀‖} (whole, or each row's
 * {@code lr·floor·‖p₀ row‖}), so it doubles with the lr, as in the record it comes from, whose floor bounds the update
 * that the lr then multiplies; a floor that does not bind leaves Muon's step bit for bit. In every dtype muon-core
 * trains in.
 */
@ExtendWith(NativeScopePerTest.class)
class UpdateFloorTest {
    private static final long ROWS = 8;
    private static final long COLS = 12;
    /** The weights' scale: ‖p₀‖ about 98, so that 0.35·‖p₀‖ is far above Muon's step norm of about √8 per lr. */
    private static final double SCALE = 10;

    /**
     * Each dtype with the relative bound on a step's norm: float64 and float32 round the norms and the factor; a
     * bfloat16 parameter rounds the factor to 8 bits and each value after the step, so its step is measured to
     * about 1 %.
     */
    static Stream<Arguments> dtypes() {
        return Stream.of(Arguments.of(ScalarType.Double, 1e-12), Arguments.of(ScalarType.Float, 1e-5),
                Arguments.of(ScalarType.BFloat16, 2e-2));
    }

    /** One step of a floored Muon at {@code lr}: the parameter before and after, in float64. */
    private static Tensor[] step(ScalarType dtype, double lr, UpdateFloorConfig floor, long seed) {
        torch.manual_seed(seed);
        Tensor p = torch.randn(ROWS, COLS).mul_(new Scalar(SCALE)).to(dtype)
                .requires_grad_(true);
        Tensor grad = torch.randn(ROWS, COLS).to(dtype);
        Tensor before = p.detach().to(ScalarType.Double).clone();
        // A float64 parameter iterates in float64 too: its O, and so the factor rounded to O's dtype, stay float64.
        MuonConfig config = MuonConfig.defaults().withLr(lr).withWeightDecay(0);
        if (dtype == ScalarType.Double) {
            config = config.withNsPrecision(NsPrecision.FLOAT64);
        }
        Muon muon = Muon.of(List.of(p), floor == null ? config : config.withUpdateFloor(floor));
        p.mutable_grad().put(grad);
        muon.step();
        return new Tensor[] {before, p.detach().to(ScalarType.Double)};
    }

    private static double norm(Tensor t) {
        return t.norm().item_double();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dtypes")
    void aBindingFloor_makesTheStepLrTimesFloorTimesTheWeightsNorm_atEachLr(ScalarType dtype, double bound) {
        for (double lr : new double[] {0.1, 0.2}) {
            Tensor[] p = step(dtype, lr, UpdateFloorConfig.defaults(), 7);
            double expected = lr * 0.35 * norm(p[0]);
            double step = norm(p[1].sub(p[0]));
            assertEquals(expected, step, bound * expected, dtype + " at lr " + lr);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dtypes")
    void aBindingFloorPerRow_makesEachRowsStepLrTimesFloorTimesItsNorm(ScalarType dtype, double bound) {
        double lr = 0.2;
        Tensor[] p = step(dtype, lr, UpdateFloorConfig.defaults().withPerRow(true), 8);
        for (long i = 0; i < ROWS; i++) {
            double expected = lr * 0.35 * norm(p[0].select(0, i));
            double step = norm(p[1].select(0, i).sub(p[0].select(0, i)));
            assertEquals(expected, step, bound * expected, dtype + " row " + i);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dtypes")
    void aFloorThatDoesNotBind_leavesMuonsStepBitForBit(ScalarType dtype, double bound) {
        // lr·1e-4·‖p₀‖ is about 1e-2·lr, under the step's norm of about √8·lr: the factor is 1.
        Tensor[] floored = step(dtype, 0.2, new UpdateFloorConfig(1e-4, false, 1e-12), 9);
        Tensor[] plain = step(dtype, 0.2, null, 9);
        assertTrue(torch.equal(floored[0], plain[0]), "the same start");
        assertTrue(torch.equal(floored[1], plain[1]), dtype + ": a floor under the step changed it");
    }
}
