package dev.muon.distributed;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The training-loop contracts at W = 2 over Gloo ({@link ReliabilityWorker}, one JVM per rank): gradient
 * accumulation with averaging on, averaged once per step; clipping, refused where a step averages and exact where
 * the ranks hold the same gradients; and a restore after the assignment changed, both directions.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DistributedReliabilityTest {
    private static final int WORLD = 2;
    private Path dir;
    private PointerScope scope;
    private Map<String, String> rank0;
    private Map<String, String> rank1;

    @BeforeAll
    void runTwoRanks() throws Exception {
        dir = Files.createTempDirectory("muon-reliability");
        int[] codes = WorkerLauncher.run("reliability", WORLD, dir, 60_000, 240, List.of(0, 1));
        assertArrayEquals(new int[]{0, 0}, codes, this::logs);
        rank0 = WorkerLauncher.stats(dir.resolve("reliability-rank0.txt"));
        rank1 = WorkerLauncher.stats(dir.resolve("reliability-rank1.txt"));
        scope = new PointerScope();
    }

    @AfterAll
    void close() {
        if (scope != null) {
            scope.close();
        }
    }

    private String logs() {
        try {
            return WorkerLauncher.logs(dir, "reliability", WORLD);
        } catch (IOException e) {
            return e.toString();
        }
    }

    private Map<String, Tensor> params(String file) {
        return TensorFiles.read(dir.resolve(file), new TinyClassifier(0, false).named().keySet());
    }

    private static void assertBitwiseEqual(Map<String, Tensor> expected, Map<String, Tensor> actual, String what) {
        for (String name : expected.keySet()) {
            assertTrue(expected.get(name).equal(actual.get(name)), () -> what + ": '" + name + "' differs by "
                    + expected.get(name).sub(actual.get(name)).abs().max().item_double());
        }
    }

    /**
     * Each rank accumulates 3 micro-batches of its half of the batch (losses divided by 3), then one step averages
     * the ranks' sums: the whole batch's mean gradient, so the run matches the single-process whole-batch run
     * within float32 rounding (the 1e-5 of DistributedMuonAdamWTest's averaged run, for the same reason), and the
     * ranks agree bit for bit. Guards an invariant that holds: a step that averaged per backward, or stepped per
     * micro-batch, would break it.
     */
    @Test
    void accumulation_withAveraging_matchesTheWholeBatch_holdsAlready() {
        Map<String, Tensor> reference = params("accumulation-reference.pt");
        Map<String, Tensor> initial = new TinyClassifier(7, false).named();
        assertTrue(TensorFiles.maxAbsDiff(initial, reference) > 1e-3, "the reference did not train");
        for (int k : new int[]{1, ReliabilityWorker.K}) {
            Map<String, Tensor> mine = params("accumulation-k" + k + "-rank0.pt");
            assertBitwiseEqual(mine, params("accumulation-k" + k + "-rank1.pt"), "k=" + k + " rank 1 against 0");
            double diff = TensorFiles.maxAbsDiff(reference, mine);
            assertTrue(diff <= 1e-5, "k=" + k + " differs from the whole batch in one process by " + diff);
            assertEquals(String.valueOf(ReliabilityWorker.STEPS), rank0.get("stepCount.k" + k));
        }
    }

    /**
     * Averaged once per step, never per backward: a step of 3 micro-batches hands c10d the bytes of a step of
     * one (gradient-presence mask, one gradient all-reduce, the Muon broadcasts), on every rank.
     */
    @Test
    void accumulation_averagesOncePerStep_notPerBackward_holdsAlready() {
        for (Map<String, String> stats : List.of(rank0, rank1)) {
            String[] one = stats.get("payloadPerStep.k1").split(",");
            String[] three = stats.get("payloadPerStep.k" + ReliabilityWorker.K).split(",");
            assertArrayEquals(one, three, "payload per step with 1 and with 3 micro-batches");
            assertTrue(Arrays.stream(one).allMatch(p -> Long.parseLong(p) > 0), Arrays.toString(one));
        }
    }

    /** Clipping before a step that averages would clip each rank by its own norm: refused, saying what to do. */
    @Test
    void clipping_whereTheStepAverages_isRefused() {
        for (Map<String, String> stats : List.of(rank0, rank1)) {
            assertTrue(stats.get("clipAveraged").startsWith("IllegalStateException: GradientClipping.clipGradNorm: "
                    + "this MuonAdamW averages the gradients over its ranks inside step()"), stats.get("clipAveraged"));
        }
    }

    /** With the same gradients on every rank, clipping and the step are the single process's, bit for bit. */
    @Test
    void clipping_withTheSameGradientsOnEveryRank_isTheSingleProcessRun() {
        assertTrue(Arrays.stream(rank0.get("clipNorms").split(",")).anyMatch(n -> Double.parseDouble(n)
                > ReliabilityWorker.MAX_NORM), "no step was clipped: " + rank0.get("clipNorms"));
        Map<String, Tensor> reference = params("clip-reference.pt");
        for (int rank = 0; rank < WORLD; rank++) {
            assertBitwiseEqual(reference, params("clip-rank" + rank + ".pt"), "clipped run, rank " + rank);
        }
    }

    /**
     * The way docs/distributed.md gives to clip with each rank on its shard: average first
     * ({@code GradientAveraging}), then clip, then a step built not to average again. Every rank clips by the same
     * norm (the whole batch's, within float32 rounding) and the run matches the single-process clipped run within
     * the averaged runs' 1e-5; the ranks agree bit for bit.
     */
    @Test
    void clipping_afterAveragingTheShards_matchesTheSingleProcessRun() {
        String[] reference = rank0.get("clipNorms").split(",");
        for (Map<String, String> stats : List.of(rank0, rank1)) {
            String[] norms = stats.get("clipAveragedFirstNorms").split(",");
            for (int i = 0; i < norms.length; i++) {
                double expected = Double.parseDouble(reference[i]);
                assertEquals(expected, Double.parseDouble(norms[i]), 1e-5 * expected, "the norm of step " + (i + 1));
            }
        }
        assertEquals(rank0.get("clipAveragedFirstNorms"), rank1.get("clipAveragedFirstNorms"));
        Map<String, Tensor> mine = params("clip-averaged-rank0.pt");
        assertBitwiseEqual(mine, params("clip-averaged-rank1.pt"), "rank 1 against 0");
        double diff = TensorFiles.maxAbsDiff(params("clip-reference.pt"), mine);
        assertTrue(diff <= 1e-5, "differs from the clipped single-process run by " + diff);
    }

    /**
     * A checkpoint saved at W = 2 loads into a W = 2 optimizer whose fc2.weight moved (Muon to AdamW and back):
     * refused by default with the way on, and with START_FRESH every rank ends bit for bit where one process that
     * restored the same file with START_FRESH ends.
     */
    @Test
    void changedAssignment_atTwoRanks_isRefusedByDefault_andStartsFreshLikeOneProcess() {
        for (String direction : ReliabilityWorker.DIRECTIONS) {
            String expected = direction.equals("muonToAdamW")
                    ? "'fc2.weight' optimizer: this optimizer ADAMW, the state MUON"
                    : "'fc2.weight' optimizer: this optimizer MUON, the state ADAMW";
            for (Map<String, String> stats : List.of(rank0, rank1)) {
                String refused = stats.get("refused." + direction);
                assertTrue(refused.startsWith("StateMismatchException: ") && refused.contains(expected)
                        && refused.contains("restore with AssignmentChanges.START_FRESH"), refused);
                assertEquals(String.valueOf(ReliabilityWorker.SAVE_AT), stats.get("resumedStep." + direction));
            }
            Map<String, Tensor> single = params("reassign-" + direction + "-single.pt");
            assertFalse(single.get("fc2.weight").equal(new TinyClassifier(99, false).named().get("fc2.weight")));
            for (int rank = 0; rank < WORLD; rank++) {
                assertBitwiseEqual(single, params("reassign-" + direction + "-rank" + rank + ".pt"),
                        direction + " rank " + rank);
            }
        }
    }
}
