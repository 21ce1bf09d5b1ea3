package dev.muon.bench;

import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The step programs' Muon side is the {@code muon-adamw} entry's, in either dtype. */
class GptStepSettingsTest {
    @ParameterizedTest
    @EnumSource(NsPrecision.class)
    void theMuonSideIsTheMuonAdamWEntrys(NsPrecision precision) {
        MuonConfig config = GptStepSettings.muonSide(precision);
        assertEquals(0.02, config.lr());
        assertEquals(precision, config.nsPrecision());
        assertEquals(NsAlgorithm.AUTO, config.nsAlgorithm());
        assertTrue(config.batchSameShape());
        assertEquals(MuonConfig.defaults().momentum(), config.momentum());
    }
}
