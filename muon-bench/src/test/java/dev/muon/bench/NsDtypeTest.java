package dev.muon.bench;

import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The benchmarks' Newton–Schulz dtype: both by name, every other refused under the caller's name for it. */
class NsDtypeTest {
    @Test
    void takesBothDtypesByName() {
        assertEquals(NsPrecision.FLOAT32, NsDtype.precisionOf("--dtype", "float32"));
        assertEquals(NsPrecision.BFLOAT16, NsDtype.precisionOf("--dtype", "bfloat16"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "nsPrecision | float16  | nsPrecision must be float32 or bfloat16, got 'float16'",
            "--dtype     | BFLOAT16 | --dtype must be float32 or bfloat16, got 'BFLOAT16'",
            "the dtype   | ''       | the dtype must be float32 or bfloat16, got ''",
    })
    void refusesAnyOtherDtypeNamingTheArgument(String argument, String dtype, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> NsDtype.precisionOf(argument, dtype));
        assertEquals(message, e.getMessage());
    }
}
