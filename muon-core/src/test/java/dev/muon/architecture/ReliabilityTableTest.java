package dev.muon.architecture;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/reliability.md's table of promises names, in every row, the tests that keep the promise
 * ({@code Class.method}); each named test must exist in a module's test sources, so a renamed or deleted test
 * fails here instead of leaving a promise without its evidence.
 */
class ReliabilityTableTest {
    private static final Path ROOT = Path.of("..");
    private static final Pattern TEST = Pattern.compile("`([A-Z]\\w+)\\.(\\w+)`");

    @Test
    void everyPromise_namesTestsThatExist() throws IOException {
        List<String> rows = promiseRows(Files.readAllLines(ROOT.resolve("docs/reliability.md")));
        assertTrue(rows.size() >= 10, "the table has " + rows.size() + " promises");
        List<String> missing = new ArrayList<>();
        for (String row : rows) {
            String[] cells = row.split("\\|");
            Matcher m = TEST.matcher(cells[cells.length - 1]);
            int named = 0;
            while (m.find()) {
                named++;
                if (!defines(m.group(1), m.group(2))) {
                    missing.add(m.group(1) + "." + m.group(2));
                }
            }
            assertTrue(named > 0, "a promise without a test: " + row);
        }
        assertEquals(List.of(), missing, "tests named in docs/reliability.md that no test source defines");
    }

    /** The rows of the first table after the promises' heading, less its header and rule. */
    private static List<String> promiseRows(List<String> lines) {
        int at = lines.indexOf("## Promises under bad input, faults and full disks");
        assertTrue(at >= 0, "docs/reliability.md has no promises section");
        List<String> rows = new ArrayList<>();
        for (int i = at + 1; i < lines.size() && !lines.get(i).startsWith("## "); i++) {
            String line = lines.get(i);
            if (line.startsWith("| ") && !line.startsWith("| promise") && !line.startsWith("| ---")) {
                rows.add(line);
            }
        }
        return rows;
    }

    /** Whether a test source {@code type.java} of any module declares a method {@code method(}. */
    private static boolean defines(String type, String method) {
        try (Stream<Path> files = Files.walk(ROOT, 8)) {
            return files.filter(p -> p.getFileName().toString().equals(type + ".java"))
                    .filter(p -> p.toString().contains("src/test/java"))
                    .anyMatch(p -> read(p).contains(" " + method + "("));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
