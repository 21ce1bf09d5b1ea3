package dev.muon.distributed;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Distributed MuonAdamW over Gloo on 127.0.0.1, with each rank in its own JVM ({@link ShardedTrainingWorker}):
 * two runs, W = 2 and then W = 3 (which resumes W = 2's checkpoint), against the single-process run of the same
 * model and data.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DistributedMuonAdamWTest {
    private static final long TIMEOUT_MILLIS = 60_000;
    private Path dir;
    private PointerScope scope;

    @BeforeAll
    void runBothWorlds() throws Exception {
        dir = Files.createTempDirectory("muon-distributed");
        Path w2 = Files.createDirectories(dir.resolve("w2"));
        Path w3 = Files.createDirectories(dir.resolve("w3"));
        int[] codes2 = WorkerLauncher.run("train", 2, w2, TIMEOUT_MILLIS, 240, List.of(0, 1));
        assertArrayEquals(new int[]{0, 0}, codes2, () -> logs(w2, 2));
        int[] codes3 = WorkerLauncher.run("train", 3, w3, TIMEOUT_MILLIS, 240, List.of(0, 1, 2),
                w2.resolve("ckpt-w2.pt").toString());
        assertArrayEquals(new int[]{0, 0, 0}, codes3, () -> logs(w3, 3));
        scope = new PointerScope();
    }

    @AfterAll
    void close() {
        if (scope != null) {
            scope.close();
        }
    }

    private static String logs(Path world, int size) {
        try {
            return WorkerLauncher.logs(world, "train", size);
        } catch (IOException e) {
            return e.toString();
        }
    }

    private Map<String, Tensor> params(int world, String file) {
        Path path = dir.resolve("w" + world).resolve(file);
        return TensorFiles.read(path, new TinyClassifier(0, false).named().keySet());
    }

    private static void assertBitwiseEqual(Map<String, Tensor> expected, Map<String, Tensor> actual, String what) {
        for (String name : expected.keySet()) {
            assertTrue(expected.get(name).equal(actual.get(name)), () -> what + ": parameter '" + name
                    + "' differs from the single-process run by up to "
                    + expected.get(name).sub(actual.get(name)).abs().max().item_double());
        }
    }

    /** Every rank's parameters of run {@code run} have the bits of the single-process run's. */
    private void assertEveryRankBitwiseEqual(int world, String run, String referenceFile, String what) {
        Map<String, Tensor> reference = params(world, referenceFile);
        for (int rank = 0; rank < world; rank++) {
            assertBitwiseEqual(reference, params(world, run + "-rank" + rank + ".pt"), what + " rank " + rank);
        }
    }

    /**
     * Rank 0's parameters of run {@code run}, after checking that every other rank ended with the same bits and
     * that they lie within {@code tolerance} of the single-process run.
     */
    private Map<String, Tensor> assertRanksAgreeAndWithin(int world, String run, String referenceFile,
                                                         double tolerance) {
        Map<String, Tensor> rank0 = params(world, run + "-rank0.pt");
        for (int rank = 1; rank < world; rank++) {
            assertBitwiseEqual(rank0, params(world, run + "-rank" + rank + ".pt"), "W=" + world + " " + run
                    + " rank " + rank + " against rank 0");
        }
        double diff = TensorFiles.maxAbsDiff(params(world, referenceFile), rank0);
        assertTrue(diff <= tolerance, "W=" + world + ": run '" + run + "' differs from the single-process run by "
                + diff);
        return rank0;
    }

    /** The runs train at all: otherwise equal parameters would prove nothing. */
    @Test
    void reference_movesEveryParameter() {
        Map<String, Tensor> initial = new TinyClassifier(7, false).named();
        Map<String, Tensor> trained = params(2, "reference.pt");
        for (String name : initial.keySet()) {
            assertTrue(initial.get(name).sub(trained.get(name)).abs().max().item_double() > 1e-4,
                    "parameter '" + name + "' did not move in 10 steps");
        }
    }

    /**
     * Same gradients on every rank (an outside DDP's situation): owners do exactly the single-process arithmetic
     * on exactly the same values, and the broadcast copies bits, so every rank must match bit for bit.
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void exactGradients_everyRankEqualsSingleProcessBitForBit(int world) {
        assertEveryRankBitwiseEqual(world, "exact", "reference.pt", "W=" + world);
    }

    /**
     * Each rank gets its own third or half of the batch and the optimizer averages the gradients. The mean of the
     * shards' mean gradients equals the full batch's mean gradient in exact arithmetic; in float32 the sums are
     * associated differently, about 1e-7 relative to a gradient. Ten steps of Muon (lr 0.02, orthogonalized
     * updates of spectral norm ~1) and AdamW (lr 3e-3) move each weight by at most ~0.2; an O(1e-7) relative
     * perturbation of the inputs of Newton–Schulz and of AdamW's normalized step changes that by well under
     * 1e-5, while any real error (a missing or doubled gradient, a stale parameter) changes it by ~1e-3 or more.
     * All ranks must still agree bit for bit with each other.
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void averagedGradients_matchSingleProcessWithinRounding(int world) {
        assertRanksAgreeAndWithin(world, "averaged", "reference.pt", 1e-5);
    }

    /**
     * bfloat16 sync rounds each step's update (at most ~0.02 per element) to 8 significant bits, an error of at
     * most 2^-9 of it, ~4e-5 per step and ~4e-4 over ten steps even if every rounding went the same way; ranks
     * stay bit-identical to each other because all add the same rounded update to the same old value.
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void bf16Sync_ranksIdentical_andCloseToSingleProcess(int world) {
        Map<String, Tensor> rank0 = assertRanksAgreeAndWithin(world, "bf16", "reference.pt", 4e-4);
        assertTrue(TensorFiles.maxAbsDiff(params(world, "reference.pt"), rank0) > 0,
                "W=" + world + ": bf16 sync changed nothing, so the bf16 path did not run");
    }

    /** {@code Muon} alone, distributed: exact gradients give the single-process bits; averaged ones agree closely. */
    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void muonAlone_distributed_matchesSingleProcess(int world) {
        assertEveryRankBitwiseEqual(world, "muon-only-exact", "muon-only-reference.pt", "W=" + world + " Muon");
        // Same argument and bound as for MuonAdamW's averaged run.
        assertRanksAgreeAndWithin(world, "muon-only-averaged", "muon-only-reference.pt", 1e-5);
    }

    /** Each rank holds the momentum of what it owns only: the shares add up to the whole, each within the plan. */
    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void muonState_isSplitAcrossRanks(int world) throws IOException {
        long sum = 0;
        long total = -1;
        for (int rank = 0; rank < world; rank++) {
            Map<String, String> stats = WorkerLauncher.stats(dir.resolve("w" + world).resolve("stats-rank" + rank
                    + ".txt"));
            long mine = Long.parseLong(stats.get("muonStateBytes"));
            total = Long.parseLong(stats.get("totalMuonStateBytes"));
            double bound = Double.parseDouble(stats.get("stateImbalance")) * total / world;
            assertTrue(mine > 0 && mine <= bound + 1e-9, "W=" + world + " rank " + rank + " holds " + mine
                    + " bytes of Muon state; the plan allows " + bound + " of " + total);
            sum += mine;
        }
        assertEquals(total, sum, "the ranks' Muon state must add up to the single-process state");
    }

    /** W = 2's step-5 checkpoint, resumed at W = 3 and in a single process, ends where ten uninterrupted steps do. */
    @Test
    void checkpointFromTwoRanks_resumesAtThreeRanksAndAtOne() throws IOException {
        Map<String, Tensor> reference = params(3, "reference.pt");
        for (int rank = 0; rank < 3; rank++) {
            assertEquals("5", WorkerLauncher.stats(dir.resolve("w3").resolve("stats-rank" + rank + ".txt"))
                    .get("resumedStep"));
            assertBitwiseEqual(reference, params(3, "resumed-rank" + rank + ".pt"), "W=2 -> W=3, rank " + rank);
        }
        assertBitwiseEqual(reference, params(3, "resumed-single.pt"), "W=2 -> 1 process");
    }

    @Test
    void plans_ownEveryMuonParameterOnce() throws IOException {
        for (int world : new int[]{2, 3}) {
            List<Integer> owned = IntStream.range(0, world).boxed().flatMap(rank -> {
                try {
                    String list = WorkerLauncher.stats(dir.resolve("w" + world).resolve("stats-rank" + rank
                            + ".txt")).get("owned");
                    return java.util.Arrays.stream(list.replaceAll("[\\[\\] ]", "").split(","))
                            .filter(s -> !s.isEmpty()).map(Integer::parseInt);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).sorted().collect(Collectors.toList());
            assertEquals(List.of(0, 1, 2, 3), owned, "W=" + world);
        }
    }
}
