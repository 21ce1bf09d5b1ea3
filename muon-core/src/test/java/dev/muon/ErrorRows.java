package dev.muon;

import org.junit.jupiter.params.provider.Arguments;

import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The rows of an error table whose bad inputs all throw {@link IllegalArgumentException}: a row is the test's name,
 * the call and the exact message it must give.
 */
final class ErrorRows {
    private ErrorRows() {
    }

    static Arguments row(String name, Supplier<Object> call, String message) {
        return Arguments.of(name, call, message);
    }

    /** The call throws {@link IllegalArgumentException} with exactly {@code message}. */
    static void assertRejected(Supplier<Object> call, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::get);
        assertEquals(message, e.getMessage());
    }
}
