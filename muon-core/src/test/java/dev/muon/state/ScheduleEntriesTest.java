package dev.muon.state;

import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.ScheduleRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A schedule record's schedule in a checkpoint: typed fields under keys written by hand (so a renamed field in the
 * code changes no file), every kind round-tripping through JSON text, and the one-line text of earlier files read
 * by the spelling they were written with.
 */
class ScheduleEntriesTest {
    private static final double[] LRS = {0.02, 3e-3};

    static Stream<Arguments> records() {
        return Stream.of(
                Arguments.of(ScheduleRecord.of(LRS, LrSchedule.constant()), Map.of("kind", "constant")),
                Arguments.of(ScheduleRecord.of(LRS, LrSchedule.warmupCosine(5, 20, 0.1)), ordered("kind",
                        "warmupCosine", "warmupSteps", 5L, "totalSteps", 20L, "minFactor", 0.1)),
                Arguments.of(ScheduleRecord.of(LRS, LrSchedule.warmupStableDecay(200, 8_000, 1_800, 0.0)),
                        ordered("kind", "warmupStableDecay", "warmupSteps", 200L, "stableSteps", 8000L,
                                "decaySteps", 1800L, "minFactor", 0.0)),
                Arguments.of(ScheduleRecord.of(LRS, step -> 1.0), Map.of("kind", "custom")),
                Arguments.of(ScheduleRecord.unknown(LRS), Map.of("kind", "unknown")));
    }

    private static Map<String, Object> ordered(Object... pairs) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            out.put((String) pairs[i], pairs[i + 1]);
        }
        return out;
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("records")
    void record_isWrittenByHandWrittenKeys_andReadsBack(ScheduleRecord record, Map<String, Object> json) {
        assertEquals(json, ScheduleEntries.toJson(record));
        Object text = Json.parse(Json.write(ScheduleEntries.toJson(record)), "test");
        assertEquals(record, ScheduleEntries.fromJson(LRS, text, "schedule"));
    }

    /** A schedule of a kind the codec does not spell, as a new built-in one would be until it is added there. */
    private record Linear(long steps) implements LrSchedule {
        @Override
        public double factor(long step) {
            return 1.0;
        }
    }

    @Test
    void builtInSchedule_ofAKindNotWrittenHere_isRefused_namingIt() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ScheduleEntries.builtIn(new Linear(10)));
        assertEquals("cannot save a schedule of kind dev.muon.state.ScheduleEntriesTest$Linear: a checkpoint holds "
                + "constant, warmupCosine, warmupStableDecay, custom or unknown", e.getMessage());
    }

    static Stream<Arguments> firstFormatTexts() {
        return Stream.of(
                Arguments.of("WarmupCosine[warmupSteps=5, totalSteps=20, minFactor=0.1]",
                        ScheduleRecord.of(LRS, LrSchedule.warmupCosine(5, 20, 0.1))),
                Arguments.of("WarmupStableDecay[warmupSteps=200, stableSteps=8000, decaySteps=1800, minFactor=0.0]",
                        ScheduleRecord.of(LRS, LrSchedule.warmupStableDecay(200, 8_000, 1_800, 0.0))),
                Arguments.of("Constant[]", ScheduleRecord.of(LRS, LrSchedule.constant())),
                Arguments.of("custom", ScheduleRecord.of(LRS, step -> 1.0)),
                Arguments.of("unknown (restored from a state without a schedule record)",
                        ScheduleRecord.unknown(LRS)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("firstFormatTexts")
    void firstFormatText_readsAsItWasWritten(String text, ScheduleRecord expected) {
        assertEquals(expected, ScheduleEntries.fromJson(LRS, text, "schedule"));
    }

    static Stream<Arguments> badEntries() {
        return Stream.of(
                Arguments.of("an unknown kind", Map.of("kind", "linear"), "schedule.kind must be constant, "
                        + "warmupCosine, warmupStableDecay, custom or unknown, got 'linear'"),
                Arguments.of("a missing field", Map.of("kind", "warmupCosine", "warmupSteps", 5L, "totalSteps", 20L),
                        "schedule.minFactor must be a number, got null"),
                Arguments.of("a field of another kind", ordered("kind", "constant", "minFactor", 0.1),
                        "schedule must have exactly the keys [kind] for its kind, got [kind, minFactor]"),
                Arguments.of("a field breaking its rule", ordered("kind", "warmupCosine", "warmupSteps", 5L,
                        "totalSteps", 3L, "minFactor", 0.1), "schedule totalSteps must be > warmupSteps (5), got 3"),
                Arguments.of("text of no schedule", "Linear[steps=3]", "schedule is not a schedule's text, got "
                        + "'Linear[steps=3]'"),
                Arguments.of("no kind", Map.of("warmupSteps", 5L), "schedule must be an object with a 'kind', or a "
                        + "schedule's text"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badEntries")
    void badEntry_isRefused_namingIt(String what, Object json, String message) {
        FormatException e = assertThrows(FormatException.class, () -> ScheduleEntries.fromJson(LRS, json,
                "schedule"));
        assertEquals(message, e.entry() + " " + e.rule());
    }

    @Test
    void customRecords_areEqual_whateverTheirFunction() {
        assertEquals(ScheduleRecord.of(LRS, step -> 1.0), ScheduleRecord.of(LRS, step -> 0.5));
    }
}
