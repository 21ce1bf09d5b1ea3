package dev.muon;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The assignment table's notes keep to its width: a long line is broken at spaces, a short one is left alone. */
class AssignmentTableWrapTest {
    private static final String LONG = "Newton-Schulz: DJL's NDArray products (no Muon matrix is float32 with a short "
            + "side of at least 256, where muon-core's native kernels start)";

    @Test
    void aLongNote_isBrokenAtSpaces_withTheWordsInOrder() {
        String wrapped = AssignmentTable.wrappedLines(LONG);
        List<String> lines = wrapped.lines().toList();
        assertTrue(lines.size() > 1, wrapped);
        assertTrue(lines.stream().allMatch(l -> l.length() <= AssignmentTable.WIDTH), wrapped);
        assertTrue(lines.stream().skip(1).allMatch(l -> l.startsWith("  ") && !l.startsWith("   ")), wrapped);
        assertEquals(Arrays.asList(LONG.split(" ")), Arrays.asList(wrapped.strip().split("\\s+")));
        assertTrue(wrapped.endsWith("start)\n"), wrapped);
    }

    @Test
    void shortLines_andAlreadyWrappedNotes_areLeftAsTheyAre() {
        String note = "Newton-Schulz: muon-core's native float32 kernels on the CPU for a,\n  b, c";
        assertEquals(note + "\n", AssignmentTable.wrappedLines(note));
        assertEquals("\n", AssignmentTable.wrappedLines(""));
    }

    @Test
    void aWordLongerThanALine_keepsALineOfItsOwn() {
        String word = "x".repeat(AssignmentTable.WIDTH + 5);
        assertEquals("see\n  " + word + "\n  end\n", AssignmentTable.wrappedLines("see " + word + " end"));
    }
}
