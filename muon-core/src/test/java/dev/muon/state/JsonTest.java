package dev.muon.state;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The JSON reader of file headers: strict, bounded, and the writer's output reads back equal. */
class JsonTest {
    @Test
    void values_roundTrip_withDoublesBitForBit() {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("int", Long.MIN_VALUE);
        root.put("double", 0.1 + 0.2);
        root.put("tiny", Double.MIN_VALUE);
        root.put("exp", 1e-300);
        root.put("text", "tab\\t \"quoted\" \\\\ back\\u0001 é → ✓");
        root.put("list", List.of(true, false, 3L));
        List<Object> withNull = new ArrayList<>();
        withNull.add(null);
        root.put("null", withNull);
        root.put("nested", Map.of("k", List.of(Map.of())));
        assertEquals(root, Json.parse(Json.write(root), "test"));
    }

    @Test
    void whitespace_andEscapes_areRead() {
        assertEquals(Map.of("a", List.of(1L, -0.5, "A\n/")),
                Json.parse(" {\"a\" :\t[ 1 ,-0.5e0, \"\\u0041\\n\\/\" ] }\n", "test"));
    }

    static Stream<Arguments> malformed() {
        return Stream.of(
                Arguments.of("", "ends where a value was expected"),
                Arguments.of("{\"a\":1,\"a\":2}", "repeats the key \"a\""),
                Arguments.of("[1,]", "has ']' where a value was expected"),
                Arguments.of("{\"a\" 1}", "has '1' where ':' was expected"),
                Arguments.of("{1:2}", "has an object key that is not a string"),
                Arguments.of("\"abc", "ends inside a string"),
                Arguments.of("\"a\u0001\"", "has a control character in a string"),
                Arguments.of("\"\\x\"", "has the unknown escape '\\x'"),
                Arguments.of("\"\\u12zz\"", "has a \\u escape that is not 4 hex digits"),
                Arguments.of("\"\\u12", "ends inside a \\u escape"),
                Arguments.of("01", "has text after its JSON value"),
                Arguments.of("1.", "has a number with no digit after '.'"),
                Arguments.of("1e", "has a number with no digit in its exponent"),
                Arguments.of("-", "has a number without digits"),
                Arguments.of("99999999999999999999", "has the integer 99999999999999999999, outside the 64-bit range"),
                Arguments.of("tru", "has an unknown literal where a value was expected"),
                Arguments.of("NaN", "has 'N' where a value was expected"),
                Arguments.of("[1 2]", "has '2' where ',' or ']' was expected"),
                Arguments.of("[".repeat(33) + "]".repeat(33), "nests arrays and objects deeper than 32"),
                Arguments.of("[".repeat(100_000), "nests arrays and objects deeper than 32"));
    }

    @ParameterizedTest
    @MethodSource("malformed")
    void malformed_isRefused_namingThePlaceAndTheRule(String text, String rule) {
        FormatException e = assertThrows(FormatException.class, () -> Json.parse(text, "the header"));
        assertEquals("the header", e.entry());
        assertEquals(true, e.rule().startsWith("is not valid JSON: at character ") && e.rule().endsWith(rule),
                e.getMessage());
    }

    @Test
    void nesting_atTheBound_isRead() {
        Object v = Json.parse("[".repeat(32) + "]".repeat(32), "test");
        for (int d = 0; d < 31; d++) {
            v = ((List<?>) v).get(0);
        }
        assertEquals(List.of(), v);
    }

    @Test
    void writer_refusesWhatJsonCannotHold() {
        assertEquals("JSON has no value for the double NaN", assertThrows(IllegalArgumentException.class,
                () -> Json.write(Double.NaN)).getMessage());
        assertEquals("JSON object keys must be strings, got 1", assertThrows(IllegalArgumentException.class,
                () -> Json.write(Map.of(1, 2))).getMessage());
    }
}
