package dev.muon.examples.study;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A results row cut short by a kill during its write ({@link ResultsFile}), for the tests of both studies' files
 * and sweeps: how one is made, and what a sweep resumed past it must leave of the file.
 */
final class CutRow {
    private CutRow() {
    }

    /**
     * Appends the start of a row to a results file without a line break, as a kill in the middle of its write
     * leaves it.
     *
     * @param csv    the file
     * @param row    the row
     * @param length how many of its characters were written
     * @return what was appended
     * @throws IOException if the file cannot be written
     */
    static String append(Path csv, String row, int length) throws IOException {
        String cut = row.substring(0, length);
        Files.writeString(csv, cut, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        return cut;
    }

    /**
     * Checks a results file after a sweep resumed past a cut row: the lines before it are untouched and the cut row
     * is left where it was, the new rows after it.
     *
     * @param csv    the file
     * @param before its lines before the cut row was appended
     * @param cut    the cut row
     * @return the file's lines now
     * @throws IOException if the file cannot be read
     */
    static List<String> assertKeptBefore(Path csv, List<String> before, String cut) throws IOException {
        List<String> after = Files.readAllLines(csv);
        assertEquals(before, after.subList(0, before.size()));
        assertEquals(cut, after.get(before.size()));
        return after;
    }
}
