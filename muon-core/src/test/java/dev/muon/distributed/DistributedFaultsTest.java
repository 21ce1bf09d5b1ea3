package dev.muon.distributed;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the other ranks see when one rank dies, stalls or differs: a clear error on every live rank, within the
 * timeout, and nothing half-changed. Each case starts two worker JVMs on 127.0.0.1.
 */
class DistributedFaultsTest {
    /** Short, so that a stall costs the suite little; long enough for two JVMs to reach step 3 on a busy machine. */
    private static final long TIMEOUT_MILLIS = 8_000;

    @TempDir
    Path dir;

    /**
     * Rank 1 halts (as after a crash or a kill) or hangs before step 3; rank 0 must fail in step 3's first
     * collective with an error naming the operation and the timeout, no later than the timeout (plus scheduling
     * slack), and not hang.
     */
    @ParameterizedTest
    @ValueSource(strings = {"die", "stall"})
    void lostRank_failsTheOthersWithinTheTimeout(String scenario) throws Exception {
        WorkerLauncher.run(scenario, 2, dir, TIMEOUT_MILLIS, 180, List.of(0));
        Path report = dir.resolve("fault-rank0.txt");
        assertTrue(Files.exists(report), () -> "rank 0 reported no error; logs:\n" + logs(scenario));
        Map<String, String> fault = WorkerLauncher.stats(report);
        String message = fault.get("message");
        assertEquals(String.valueOf(ShardedTrainingWorker.FAULT_AT), fault.get("step"));
        assertTrue(message.contains("all-reduce of the gradient-presence mask"), message);
        assertTrue(message.contains("failed on rank 0 of 2"), message);
        assertTrue(message.contains("timeout " + TIMEOUT_MILLIS + " ms"), message);
        long waited = Long.parseLong(fault.get("waitedMillis"));
        assertTrue(waited <= TIMEOUT_MILLIS + 3_000, "rank 0 waited " + waited + " ms");
        if (scenario.equals("stall")) {
            // A live but silent peer is only noticed by the timeout.
            assertTrue(waited >= TIMEOUT_MILLIS - 1_000, "rank 0 gave up after " + waited + " ms");
        }
    }

    /**
     * Rank 1 builds from a model with one more parameter, or with another non-finite policy: both ranks refuse at
     * construction, and so do both ranks of a build with Hyperball at a fixed radius, whose parameters stay off its
     * sphere until a build is agreed. Then a checkpoint that one rank cannot read, or checkpoints of different
     * content on the two ranks, are refused by every rank with nothing changed, a save that rank 0 cannot write
     * fails on both ranks, and the group still works afterwards.
     */
    @Test
    void mismatchesAndCheckpointErrors_failEveryRank_andChangeNothing() throws Exception {
        int[] codes = WorkerLauncher.run("errors", 2, dir, 60_000, 180, List.of(0, 1));
        assertEquals(0, codes[0] + codes[1], () -> logs("errors"));
        Map<String, String> rank0 = WorkerLauncher.stats(dir.resolve("errors-rank0.txt"));
        Map<String, String> rank1 = WorkerLauncher.stats(dir.resolve("errors-rank1.txt"));
        for (Map<String, String> rank : List.of(rank0, rank1)) {
            assertTrue(rank.get("mismatch").startsWith("IllegalStateException: MuonAdamW parameter lists and "
                    + "settings differ across ranks"), rank.get("mismatch"));
            assertTrue(rank.get("policyMismatch").startsWith("IllegalStateException: MuonAdamW parameter lists "
                    + "and settings differ across ranks"), rank.get("policyMismatch"));
            // The rank that lacks the file throws StateFileException (an IllegalStateException); the other learns of it.
            assertTrue(rank.get("loadMissing").startsWith("IllegalStateException")
                    || rank.get("loadMissing").startsWith("StateFileException"), rank.get("loadMissing"));
            assertTrue(rank.get("loadDifferent").startsWith("IllegalStateException: the step and content of "
                    + "checkpoint ") && rank.get("loadDifferent").contains("differ across ranks"),
                    rank.get("loadDifferent"));
            assertTrue(rank.get("sphereMismatch").startsWith("IllegalStateException: MuonAdamW parameter lists "
                    + "and settings differ across ranks"), rank.get("sphereMismatch"));
            assertTrue(rank.get("muonSphereMismatch").startsWith("IllegalStateException: Muon parameter lists "
                    + "differ across ranks"), rank.get("muonSphereMismatch"));
            assertEquals("true", rank.get("unchangedAfterRefusedBuilds"), "a refused build put no parameter on "
                    + "Hyperball's sphere");
            assertTrue(Double.parseDouble(rank.get("offSphereAfterAgreedBuild")) < 1e-5,
                    "an agreed build put every Muon matrix on the sphere: " + rank.get("offSphereAfterAgreedBuild"));
            assertEquals("true", rank.get("unchangedAfterFailedLoad"));
            assertEquals("true", rank.get("gradientsUnchangedAfterRefusedAverage"));
            assertTrue(rank.get("saveUnwritable").startsWith("UncheckedIOException"), rank.get("saveUnwritable"));
            assertEquals(String.valueOf(ShardedTrainingWorker.STEPS), rank.get("stepAfterErrors"));
        }
        assertTrue(rank1.get("loadMissing").startsWith("StateFileException: checkpoint ")
                && rank1.get("loadMissing").contains("missing.pt: the file does not exist"), rank1.get("loadMissing"));
        assertTrue(rank0.get("loadMissing").contains("rank(s) [1] failed"), rank0.get("loadMissing"));
        assertEquals("IllegalStateException: the gradient of parameter 'fc2.weight' must be contiguous for gradient "
                + "averaging, got shape [48, 48] with strides [1, 48]; no gradient was changed",
                rank1.get("averageNotContiguous"));
        assertEquals("IllegalStateException: 1 of 2 ranks hold a gradient that is not contiguous (see their error), "
                + "so rank 0 stops too; no gradient was changed", rank0.get("averageNotContiguous"));
        assertTrue(rank1.get("saveUnwritable").contains("rank 0 could not write checkpoint"),
                rank1.get("saveUnwritable"));
        assertTrue(Files.notExists(dir.resolve("no-such-dir")), "a failed save left a folder behind");
    }

    private String logs(String scenario) {
        try {
            return WorkerLauncher.logs(dir, scenario, 2);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }
}
