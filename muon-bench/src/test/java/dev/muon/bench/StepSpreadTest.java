package dev.muon.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** {@link StepSpread} on times whose percentiles are known by hand. */
class StepSpreadTest {
    @Test
    void oneSlowStepInAHundred_isItsP99AndMax_notItsMedianOrP90() {
        double[] ms = new double[100];
        for (int i = 0; i < ms.length; i++) {
            ms[i] = 800 + i % 10;
        }
        ms[37] = 1049;
        StepSpread s = StepSpread.of(ms);
        // 99 steps of 800..809 (ten of each but 807, nine of it) and one of 1049.
        assertEquals(804.5, s.median(), 1e-12);
        assertEquals(809, s.p90(), 1e-12);
        assertEquals(809, s.p99(), 1e-12);
        assertEquals(1049, s.max(), 1e-12);
        ms[38] = 1100;
        assertEquals(1049, StepSpread.of(ms).p99(), 1e-12, "two slow steps in a hundred: the 99th is the first");
    }

    @Test
    void tenTimes_byNearestRank() {
        StepSpread s = StepSpread.of(new double[]{10, 1, 9, 2, 8, 3, 7, 4, 6, 5});
        assertEquals(5.5, s.median(), 1e-12);
        assertEquals(9, s.p90(), 1e-12);
        assertEquals(10, s.p99(), 1e-12);
        assertEquals(10, s.max(), 1e-12);
        assertEquals("median 5.5, p90 9.0, p99 10.0, max 10.0 ms", s.toString());
    }

    static Stream<Arguments> badTimes() {
        return Stream.of(
                Arguments.of(new double[0], "step times must hold at least one time, got none"),
                Arguments.of(new double[]{1, Double.NaN}, "step times must be finite, got NaN"),
                Arguments.of(new double[]{Double.POSITIVE_INFINITY}, "step times must be finite, got Infinity"));
    }

    @ParameterizedTest
    @MethodSource("badTimes")
    void badTimes_areRejected(double[] ms, String message) {
        assertEquals(message, assertThrows(IllegalArgumentException.class, () -> StepSpread.of(ms)).getMessage());
    }
}
