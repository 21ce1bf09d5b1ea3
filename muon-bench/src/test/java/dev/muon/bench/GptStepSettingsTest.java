package dev.muon.bench;

import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The step programs' shared settings: both dtypes by name, every other refused under the caller's name for it. */
class GptStepSettingsTest {
    @Test
    void takesBothDtypesByName() {
        assertEquals(NsPrecision.FLOAT32, GptStepSettings.precisionOf("--dtype", "float32"));
        assertEquals(NsPrecision.BFLOAT16, GptStepSettings.precisionOf("--dtype", "bfloat16"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "nsPrecision | float16  | nsPrecision must be float32 or bfloat16, got 'float16'",
            "--dtype     | BFLOAT16 | --dtype must be float32 or bfloat16, got 'BFLOAT16'",
            "the dtype   | ''       | the dtype must be float32 or bfloat16, got ''",
    })
    void refusesAnyOtherDtypeNamingTheArgument(String argument, String dtype, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GptStepSettings.precisionOf(argument, dtype));
        assertEquals(message, e.getMessage());
    }

    @Test
    void theMuonSideIsTheMuonAdamWEntrys() {
        var config = GptStepSettings.muonSide(NsPrecision.BFLOAT16);
        assertEquals(0.02, config.lr());
        assertEquals(NsPrecision.BFLOAT16, config.nsPrecision());
        assertEquals(NsAlgorithm.AUTO, config.nsAlgorithm());
        assertTrue(config.batchSameShape());
    }
}
