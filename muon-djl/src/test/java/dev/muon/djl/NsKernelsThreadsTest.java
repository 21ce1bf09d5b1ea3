package dev.muon.djl;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The native kernels follow DJL's thread setting, or every core where it is unset, and refuse a bad one by name. */
class NsKernelsThreadsTest {
    @ParameterizedTest
    @CsvSource(nullValues = "unset", value = {"unset, 6", "1, 1", "4, 4", "' 3 ', 3"})
    void takesDjlsSetting_orEveryCore(String value, int expected) {
        assertEquals(expected, NsKernels.threads(value, 6));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"0", "-2", "four", "2.5", "''"})
    void refusesAnythingButAWholeNumberFromOne(String value) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NsKernels.threads(value, 6));
        assertEquals("ai.djl.pytorch.num_threads must be a whole number >= 1, got '" + value + "'", e.getMessage());
    }
}
