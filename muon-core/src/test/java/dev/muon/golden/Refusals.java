package dev.muon.golden;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What every binding's refusal must read like (the binding error tables of muon-core and muon-djl): one line,
 * exactly the expected message, naming the parameter it concerns.
 */
public final class Refusals {
    private Refusals() {
    }

    /**
     * Checks a refusal's message.
     *
     * @param e         the refusal
     * @param message   the exact message
     * @param parameter what it must name, or null for a refusal of no parameter
     */
    public static void assertOneLineNaming(RuntimeException e, String message, String parameter) {
        String got = e.getMessage();
        assertFalse(got.contains("\n"), "a one-line message: " + got);
        assertEquals(message, got);
        if (parameter != null) {
            assertTrue(got.contains(parameter), "names " + parameter + ": " + got);
        }
    }
}
