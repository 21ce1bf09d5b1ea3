package dev.muon.distributed;

import dev.muon.ConformanceMatrixWorker;
import dev.muon.golden.NativeScopePerTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The conformance matrix at world size 2: every cell of muon-core's matrix ({@code ConformanceMatrixTest}) with its
 * two parameters sharded over two ranks of Gloo, one owner each, in two JVMs ({@link ConformanceMatrixWorker}); on
 * both ranks every cell matches the float64 reference within its dtype's bound or is refused as declared.
 */
@ExtendWith(NativeScopePerTest.class)
class ConformanceMatrixDistributedTest {
    @TempDir
    Path dir;

    @Test
    void everyCell_atTwoRanks_matchesTheReference_orIsRefusedAsDeclared() throws Exception {
        int[] codes = WorkerLauncher.run("conformance", 2, dir, 120_000, 900, List.of(0, 1));
        for (int code : codes) {
            assertEquals(0, code, WorkerLauncher.logs(dir, "conformance", 2));
        }
        for (int rank = 0; rank < 2; rank++) {
            List<String> report = Files.readAllLines(ConformanceMatrixWorker.report(dir, 2, rank),
                    StandardCharsets.UTF_8);
            assertEquals(ConformanceMatrixWorker.cells(), report.size(), "rank " + rank + ": one line per cell");
            List<String> wrong = report.stream().filter(line -> !line.endsWith(": ok")).toList();
            assertEquals(List.of(), wrong, "rank " + rank);
        }
    }
}
