package dev.muon;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.function.Supplier;
import java.util.stream.Stream;

import static dev.muon.ErrorRows.assertRejected;
import static dev.muon.ErrorRows.row;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

/** {@link NorMuonConfig}: defaults, the switch on {@link MuonConfig}, its text form and the validation table. */
class NorMuonConfigTest {

    @Test
    void defaults_areTheAuthorsCodes() {
        assertEquals(0.95, NorMuonConfig.defaults().beta2());
        assertEquals(1e-10, NorMuonConfig.defaults().eps());
    }

    @Test
    void muonDefaults_haveNorMuonOff() {
        assertNull(MuonConfig.defaults().norMuon());
    }

    @Test
    void withNorMuon_changesOnlyTheSwitch_andOtherCopiesKeepIt() {
        MuonConfig base = MuonConfig.defaults().withLr(0.02);
        MuonConfig on = base.withNorMuon(0.9, 1e-6);
        assertEquals(new NorMuonConfig(0.9, 1e-6), on.norMuon());
        assertEquals(on, base.withNorMuon(new NorMuonConfig(0.9, 1e-6)));
        assertEquals(base, on.withNorMuon(null));
        assertFalse(on.equals(base));
        assertEquals(new NorMuonConfig(0.9, 1e-6), on.withLr(0.1).withNsSteps(3).withBatchSameShape(false)
                .norMuon());
    }

    @Test
    void scaledLr_withNorMuon_isLrTimesPointTwoTimesExtraScale() {
        MuonConfig c = MuonConfig.defaults().withLr(0.02).withExtraScale(1.5).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW);
        assertEquals(0.02 * 0.2 * 1.5, c.withNorMuon(NorMuonConfig.defaults()).scaledLr(64, 256));
        // Off, the adjustment's ratio still applies.
        assertEquals(0.02 * (0.2 * Math.sqrt(256)) * 1.5, c.scaledLr(64, 256), 1e-15);
    }

    static Stream<Arguments> invalidSettings() {
        MuonConfig d = MuonConfig.defaults();
        return Stream.of(
                row("beta2_negative_isRejected", () -> new NorMuonConfig(-0.1, 1e-8),
                        "norMuon beta2 must be in [0, 1), got -0.1"),
                row("beta2_one_isRejected", () -> new NorMuonConfig(1.0, 1e-8),
                        "norMuon beta2 must be in [0, 1), got 1.0"),
                row("beta2_aboveOne_isRejected", () -> d.withNorMuon(1.5, 1e-8),
                        "norMuon beta2 must be in [0, 1), got 1.5"),
                row("beta2_nan_isRejected", () -> d.withNorMuon(Double.NaN, 1e-8),
                        "norMuon beta2 must be in [0, 1), got NaN"),
                row("eps_zero_isRejected", () -> new NorMuonConfig(0.95, 0.0),
                        "norMuon eps must be a finite number > 0, got 0.0"),
                row("eps_negative_isRejected", () -> d.withNorMuon(0.95, -1e-8),
                        "norMuon eps must be a finite number > 0, got -1.0E-8"),
                row("eps_infinite_isRejected", () -> d.withNorMuon(0.95, Double.POSITIVE_INFINITY),
                        "norMuon eps must be a finite number > 0, got Infinity"),
                row("eps_nan_isRejected", () -> new NorMuonConfig(0.95, Double.NaN),
                        "norMuon eps must be a finite number > 0, got NaN"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidSettings")
    void invalidSetting_isRejectedWithMessage(String name, Supplier<Object> build, String message) {
        assertRejected(build, message);
    }
}
