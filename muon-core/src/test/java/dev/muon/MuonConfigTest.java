package dev.muon;

import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static dev.muon.ErrorRows.assertRejected;
import static dev.muon.ErrorRows.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Defaults, copies and the validation table of {@link MuonConfig}. */
class MuonConfigTest {

    @Test
    void defaults_arePyTorchs() {
        MuonConfig c = MuonConfig.defaults();
        assertEquals(1e-3, c.lr());
        assertEquals(0.1, c.weightDecay());
        assertEquals(0.95, c.momentum());
        assertTrue(c.nesterov());
        assertEquals(List.of(new Coefficients(3.4445, -4.7750, 2.0315)), c.nsCoefficients().coefficients());
        assertEquals(1e-7, c.eps());
        assertEquals(5, c.nsSteps());
        assertEquals(AdjustLr.ORIGINAL, c.adjustLr());
        assertEquals(1.0, c.extraScale());
        assertEquals(NsPrecision.FLOAT32, c.nsPrecision());
        assertEquals(ConvWeights.REJECT, c.convWeights());
        assertEquals(StackedWeights.REJECT, c.stackedWeights());
        assertEquals(Orthogonalization.NEWTON_SCHULZ, c.orthogonalization());
        assertEquals(NsAlgorithm.AUTO, c.nsAlgorithm());
        assertTrue(c.batchSameShape());
    }

    @Test
    void withBatchSameShape_changesOnlyTheSwitch() {
        MuonConfig base = MuonConfig.defaults().withLr(0.02).withNsAlgorithm(NsAlgorithm.GEMM);
        MuonConfig off = base.withBatchSameShape(false);
        assertFalse(off.batchSameShape());
        assertEquals(base, off.withBatchSameShape(true));
        assertFalse(off.equals(base));
        // Every other copy keeps the switch.
        assertFalse(off.withLr(0.1).withNsSteps(3).withNsAlgorithm(NsAlgorithm.AUTO).withEps(1e-6)
                .batchSameShape());
    }

    @Test
    void withNsCoefficients_perStepSchedule_setsNsSteps() {
        MuonConfig c = MuonConfig.defaults().withNsCoefficients(CoefficientSchedule.polarExpress8());
        assertEquals(8, c.nsSteps());
        assertEquals(8, c.newtonSchulz().nsSteps());
    }

    @Test
    void withLr_changesOnlyLr() {
        MuonConfig c = MuonConfig.defaults().withLr(0.02);
        assertEquals(0.02, c.lr());
        assertEquals(MuonConfig.defaults().withLr(0.02), c);
        assertFalse(c.equals(MuonConfig.defaults()));
    }

    static Stream<Arguments> invalidConfigs() {
        MuonConfig d = MuonConfig.defaults();
        return Stream.of(
                row("lr_negative_isRejected", () -> d.withLr(-0.1), "lr must be >= 0, got -0.1"),
                row("lr_nan_isRejected", () -> d.withLr(Double.NaN), "lr must be finite, got NaN"),
                row("weightDecay_negative_isRejected", () -> d.withWeightDecay(-1e-4),
                        "weightDecay must be >= 0, got -1.0E-4"),
                row("momentum_negative_isRejected", () -> d.withMomentum(-0.1), "momentum must be >= 0, got -0.1"),
                row("momentum_one_isRejected", () -> d.withMomentum(1.0), "momentum must be < 1, got 1.0"),
                row("momentum_aboveOne_isRejected", () -> d.withMomentum(1.5), "momentum must be < 1, got 1.5"),
                row("nsSteps_zero_isRejected", () -> d.withNsSteps(0), "nsSteps must be in [1, 99], got 0"),
                row("nsSteps_hundred_isRejected", () -> d.withNsSteps(100), "nsSteps must be in [1, 99], got 100"),
                row("schedule_lengthDisagreesWithNsSteps_isRejected",
                        () -> d.withNsCoefficients(CoefficientSchedule.polarExpress5()).withNsSteps(6),
                        "nsCoefficients schedule 'polar-express-5' has 5 steps but nsSteps is 6; they must agree"),
                row("eps_zero_isRejected", () -> d.withEps(0.0), "eps must be > 0, got 0.0"),
                row("eps_negative_isRejected", () -> d.withEps(-1e-7), "eps must be > 0, got -1.0E-7"),
                row("eps_infinite_isRejected", () -> d.withEps(Double.POSITIVE_INFINITY),
                        "eps must be finite, got Infinity"),
                row("eps_nan_isRejected", () -> d.withEps(Double.NaN), "eps must be finite, got NaN"),
                row("extraScale_zero_isRejected", () -> d.withExtraScale(0.0),
                        "extraScale must be a finite number > 0, got 0.0"),
                row("coefficient_nan_isRejected", () -> new Coefficients(3.4, Double.NaN, 2.0),
                        "Coefficients.b must be finite, got NaN"),
                row("coefficient_infinite_isRejected", () -> new Coefficients(Double.NEGATIVE_INFINITY, 1, 1),
                        "Coefficients.a must be finite, got -Infinity"),
                row("schedule_empty_isRejected", () -> CoefficientSchedule.perStep(List.of()),
                        "nsCoefficients must hold at least one triple, got none"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidConfigs")
    void invalidConfig_isRejectedWithMessage(String name, Supplier<Object> build, String message) {
        assertRejected(build, message);
    }

    /** A missing argument is named with its rule, never by its name alone. */
    @Test
    void nullArguments_areRefusedWithTheRule() {
        assertEquals("config must not be null", assertThrows(NullPointerException.class,
                () -> new dev.muon.orthogonalize.NewtonSchulz(null)).getMessage());
        assertEquals("nsCoefficients must not be null", assertThrows(NullPointerException.class,
                () -> MuonConfig.defaults().withNsCoefficients(null)).getMessage());
        assertEquals("nsCoefficients[1] must not be null", assertThrows(NullPointerException.class,
                () -> CoefficientSchedule.perStep(java.util.Arrays.asList(new Coefficients(3, -3, 1), null)))
                .getMessage());
        assertEquals("coefficients must not be null", assertThrows(NullPointerException.class,
                () -> CoefficientSchedule.constant(null)).getMessage());
        assertEquals("options must not be null", assertThrows(NullPointerException.class,
                () -> AdamWConfig.of(null)).getMessage());
        assertEquals("entries[0] must not be null", assertThrows(NullPointerException.class,
                () -> new dev.muon.state.OptimizerState(0, List.of(MuonConfig.defaults()), null,
                        java.util.Arrays.asList((dev.muon.state.ParameterEntry) null), null))
                .getMessage());
        assertEquals("optimizer must not be null", assertThrows(NullPointerException.class,
                () -> GradientClipping.clipGradNorm((Muon) null, 1.0)).getMessage());
        assertEquals("shape must not be null", assertThrows(NullPointerException.class,
                () -> new dev.muon.state.RawTensor("float32", null, java.nio.ByteBuffer.allocate(0))).getMessage());
        assertEquals("shape [4294967296, 4294967296, 4] of float32 must have a byte count that fits a long, got one "
                + "that overflows it", assertThrows(IllegalArgumentException.class, () -> new dev.muon.state.RawTensor(
                "float32", new long[]{1L << 32, 1L << 32, 4}, java.nio.ByteBuffer.allocate(0))).getMessage());
    }
}
