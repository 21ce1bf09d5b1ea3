package dev.muon.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The texts a reader quotes from a file: whole when short, cut when long, and never built whole first. */
class MessagesTest {
    static Stream<Arguments> shortValues() {
        Map<String, Object> split = new LinkedHashMap<>();
        split.put("split_rows", List.of(4L, 4L, 4L));
        return Stream.of(
                Arguments.of(List.of("a", 1L, 2.5, true), "[a, 1, 2.5, true]"),
                Arguments.of(split, "{split_rows=[4, 4, 4]}"),
                Arguments.of(new long[]{6, 4}, "[6, 4]"),
                Arguments.of(dev.muon.state.TorchFiles.tuple(3.4445, null), "(3.4445, null)"),
                Arguments.of(List.of(), "[]"),
                Arguments.of(null, "null"));
    }

    /** A short value reads as toString() writes it (the messages' existing texts stay as they were). */
    @ParameterizedTest
    @MethodSource("shortValues")
    void shortened_shortValue_isWhole(Object value, String text) {
        assertEquals(text, Messages.shortened(value));
        if (value instanceof List<?> || value instanceof Map<?, ?>) {
            assertEquals(value.toString(), Messages.shortened(value));
        }
    }

    @Test
    void shortened_longShape_isCut() {
        long[] shape = new long[1000];
        Arrays.fill(shape, 123456789L);
        String text = Messages.shortened(shape);
        assertEquals(Arrays.toString(shape).substring(0, Messages.QUOTED_CHARS) + "... (cut)", text);
    }

    /**
     * 2^40 leaves of a list that shares its sublists: toString() would need terabytes; the bounded text is the
     * first characters of it, at once.
     */
    @Test
    void shortened_listOfSharedSublists_isCutWithoutWritingItOut() {
        List<Object> level = new ArrayList<>(List.of("x".repeat(10)));
        for (int k = 0; k < 40; k++) {
            level = new ArrayList<>(List.of(level, level));
        }
        String text = Messages.shortened(level);
        assertTrue(text.startsWith("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[xxxxxxxxxx], [xxxxxxxxxx]], "), text);
        assertTrue(text.endsWith("... (cut)"), text);
        assertEquals(Messages.QUOTED_CHARS + "... (cut)".length(), text.length());
    }

    @Test
    void shortened_longStringInAList_isCutBeforeItIsCopied() {
        String text = Messages.shortened(List.of("y".repeat(10_000_000)));
        assertEquals("[" + "y".repeat(Messages.QUOTED_CHARS - 1) + "... (cut)", text);
    }
}
