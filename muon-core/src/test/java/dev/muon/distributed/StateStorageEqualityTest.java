package dev.muon.distributed;

import dev.muon.CombinationCase;
import dev.muon.StateStorageEqualityWorker;
import dev.muon.golden.NativeScopePerTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where Muon's state lives changes no bit (issue 43): for every pair of the combination table (all of them shard),
 * sharded over 1, 2 and 3 ranks of Gloo, a run with the state in files and one with it in host memory (a CPU standing
 * in for the accelerator) end with the parameters and the state of the run with the state beside its parameters, bit
 * for bit, on every rank; each rank's file keeps the buffers of exactly the parameters it owns and is gone after
 * {@code close()}. Every cell of a world size runs in the same processes ({@link StateStorageEqualityWorker}), so
 * the three world sizes cost six JVM starts.
 */
@ExtendWith(NativeScopePerTest.class)
class StateStorageEqualityTest {
    @TempDir
    Path dir;

    @Test
    void everyPairOfTheTable_atOneTwoAndThreeRanks_endsBitForBitAsWithTheStateBesideItsParameters()
            throws Exception {
        int cells = CombinationCase.pairs().size();
        for (int world = 1; world <= 3; world++) {
            List<Integer> all = world == 1 ? List.of(0) : world == 2 ? List.of(0, 1) : List.of(0, 1, 2);
            int[] codes = WorkerLauncher.run("storage", world, dir, 120_000, 600, all);
            for (int code : codes) {
                assertEquals(0, code, WorkerLauncher.logs(dir, "storage", world));
            }
            for (int rank = 0; rank < world; rank++) {
                List<String> report = Files.readAllLines(StateStorageEqualityWorker.report(dir, world, rank),
                        StandardCharsets.UTF_8);
                assertEquals(2 * cells, report.size(), world + " ranks, rank " + rank + ": one line per cell and "
                        + "storage");
                for (String line : report) {
                    assertTrue(line.endsWith(": same"), world + " ranks, rank " + rank + ": " + line);
                }
            }
        }
    }
}
