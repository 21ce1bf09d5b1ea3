package dev.muon.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.SparkSession;
import org.bytedeco.openblas.global.openblas_nolapack;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Spark in local mode, {@code local[2]}: two barrier tasks, each a rank, against the same training launched by hand
 * as two JVMs and against one rank; a rank that fails once, resumed by Spark's retry of the stage; a rank that never
 * joins.
 */
class SparkTrainingTest {
    static final int STEPS = 8;
    private static SparkSession spark;
    private static JavaSparkContext jsc;
    private static TrainingRun.Result uninterrupted;

    @TempDir
    static Path tmp;

    static List<Sample> data() {
        return Sample.generate(96, 5);
    }

    @BeforeAll
    static void startSpark() {
        spark = SparkSession.builder().config(localConf()).getOrCreate();
        jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    }

    /** Spark's settings for fast, offline local tests; two stage attempts are all the tests need. */
    static SparkConf localConf() {
        return new SparkConf().setMaster("local[2]").setAppName("muon-spark-test")
                .set("spark.ui.enabled", "false")
                .set("spark.ui.showConsoleProgress", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.sql.shuffle.partitions", "2")
                .set("spark.stage.maxConsecutiveAttempts", "2");
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    private static Path newDir(String name) throws IOException {
        return Files.createDirectories(tmp.resolve(name));
    }

    private static JavaRDD<Sample> twoPartitions() {
        return jsc.parallelize(data(), 2);
    }

    /** The two-rank run without a fault, once for the tests that compare with it. */
    private static synchronized TrainingRun.Result uninterrupted() throws IOException {
        if (uninterrupted == null) {
            SparkTrainingConfig config = SparkTrainingConfig.of(2, newDir("uninterrupted").toString())
                    .withTimeout(Duration.ofSeconds(30));
            uninterrupted = SparkTraining.run(twoPartitions(), config, TrainingRun.sharded(STEPS));
        }
        return uninterrupted;
    }

    private static void assertBitIdentical(TrainingRun.Result expected, TrainingRun.Result actual) {
        assertEquals(expected.parameters().keySet(), actual.parameters().keySet());
        for (Map.Entry<String, double[]> e : expected.parameters().entrySet()) {
            assertArrayEquals(e.getValue(), actual.parameters().get(e.getKey()), e.getKey());
        }
    }

    @Test
    void twoBarrierTasks_equalTwoRanksLaunchedByHand_bitForBit() throws Exception {
        Path dir = newDir("by-hand");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        List<Process> ranks = new ArrayList<>();
        try {
            for (int rank = 0; rank < 2; rank++) {
                ProcessBuilder builder = new ProcessBuilder(java, "-Xmx384m", "-cp",
                        System.getProperty("java.class.path"), HandLaunchedRank.class.getName(),
                        String.valueOf(rank), "2", String.valueOf(port), dir.toString(), String.valueOf(STEPS));
                builder.redirectErrorStream(true).redirectOutput(dir.resolve("rank" + rank + ".log").toFile());
                builder.environment().put("OMP_WAIT_POLICY", "PASSIVE");
                builder.environment().put("OMP_NUM_THREADS", "1");
                ranks.add(builder.start());
            }
            // Spark's run meanwhile: the hand-launched JVMs spend most of their time loading libtorch.
            TrainingRun.Result onSpark = uninterrupted();
            for (int rank = 0; rank < 2; rank++) {
                assertTrue(ranks.get(rank).waitFor(120, TimeUnit.SECONDS), "rank " + rank + " did not finish");
                assertEquals(0, ranks.get(rank).exitValue(), () -> logs(dir));
            }
            TrainingRun.Result byHand;
            try (ObjectInputStream in = new ObjectInputStream(Files.newInputStream(dir.resolve("result-hand.bin")))) {
                byHand = (TrainingRun.Result) in.readObject();
            }
            assertBitIdentical(byHand, onSpark);
            assertEquals(0, onSpark.attempt());
        } finally {
            ranks.forEach(Process::destroyForcibly);
        }
    }

    private static String logs(Path dir) {
        StringBuilder out = new StringBuilder();
        for (int rank = 0; rank < 2; rank++) {
            try {
                out.append("rank ").append(rank).append(":\n").append(Files.readString(dir.resolve("rank" + rank
                        + ".log"))).append('\n');
            } catch (IOException e) {
                out.append(e).append('\n');
            }
        }
        return out.toString();
    }

    @Test
    void twoBarrierTasks_equalOneRank_onTheSameGlobalBatch_bitForBit() throws Exception {
        TrainingRun run = TrainingRun.replicated(STEPS, data());
        TrainingRun.Result two = SparkTraining.run(twoPartitions(), SparkTrainingConfig.of(2,
                newDir("replicated-2").toString()), run);
        // The Dataset entry, with another partition count than worldSize (repartitioned): the replicated run reads
        // the whole data set from the function, so the shuffle's order does not matter here.
        Dataset<Sample> rows = spark.createDataset(data(), Encoders.javaSerialization(Sample.class));
        TrainingRun.Result one = SparkTraining.run(rows, SparkTrainingConfig.of(1, newDir("replicated-1")
                .toString()), run);
        assertBitIdentical(one, two);
    }

    @Test
    void taskFailingOnce_retriedStage_resumesFromTheCheckpoint_bitForBit() throws Exception {
        Path dir = newDir("failing-once");
        TrainingRun run = TrainingRun.sharded(STEPS).failingOnce(1, 5, dir.resolve("failed-once"));
        TrainingRun.Result retried = SparkTraining.run(twoPartitions(), SparkTrainingConfig.of(2,
                dir.resolve("checkpoints").toString()).withTimeout(Duration.ofSeconds(30)), run);
        assertTrue(Files.exists(dir.resolve("failed-once")), "rank 1 did not fail");
        assertEquals(1, retried.attempt(), "the stage's second attempt returned");
        assertEquals(4, retried.startStep(), "the retry resumed from the checkpoint after step 4");
        assertBitIdentical(uninterrupted(), retried);
    }

    @Test
    void rankThatNeverJoins_failsTheStageWithTheJoinDeadline() throws Exception {
        SparkTrainingConfig config = SparkTrainingConfig.of(2, newDir("never-joins").toString())
                .withTimeout(Duration.ofSeconds(2));
        long start = System.nanoTime();
        SparkException e = assertThrows(SparkException.class, () -> SparkTraining.run(twoPartitions(), config,
                TrainingRun.sharded(STEPS), (rank, attempt) -> {
                    if (rank == 1) {
                        Thread.sleep(Long.MAX_VALUE);
                    }
                }));
        assertTrue(e.getMessage().contains("waited for rank(s) [1] of 2 to reach the rendezvous store"),
                e.getMessage());
        assertTrue(e.getMessage().contains("timeout 2000 ms"), e.getMessage());
        // Two attempts (spark.stage.maxConsecutiveAttempts=2), each ending at the 2 s deadline, not a hang.
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "took too long");
    }

    @Test
    void docSnippet_trainsOnTwoRanks() throws Exception {
        Path dir = newDir("doc-snippet");
        DocSnippetsSpark.Report report = DocSnippetsSpark.sparkRun(twoPartitions(), dir.toString(), 12);
        assertEquals(12, report.steps());
        assertTrue(Double.isFinite(report.loss()), String.valueOf(report.loss()));
        assertTrue(Files.isRegularFile(dir.resolve("checkpoint.muon")), "the step-10 checkpoint");
    }

    /**
     * Each rank runs on its task's cores, libtorch and OpenBLAS alike; once the ranks, which share this JVM (local
     * mode, as the ranks of one executor do), have all ended, both counts are what they were before.
     */
    @Test
    void taskCores_reachLibtorchAndOpenBlas_andTheCountsComeBackAfterwards() throws Exception {
        int torchBefore = torch.get_num_threads();
        int blasBefore = openblas_nolapack.blas_get_num_threads();
        // spark.task.cpus is 1 here: a count of 3 before tells a restored count from a rank's.
        torch.set_num_threads(3);
        openblas_nolapack.blas_set_num_threads(3);
        try {
            int[] seen = SparkTraining.run(twoPartitions(), SparkTrainingConfig.of(2, newDir("threads").toString()),
                    (rank, shard) -> new int[] {rank.threads(), torch.get_num_threads(),
                            openblas_nolapack.blas_get_num_threads()});
            assertArrayEquals(new int[] {1, 1, 1}, seen);
            assertEquals(3, torch.get_num_threads(), "libtorch's count after the ranks");
            assertEquals(3, openblas_nolapack.blas_get_num_threads(), "OpenBLAS's count after the ranks");
        } finally {
            torch.set_num_threads(torchBefore);
            openblas_nolapack.blas_set_num_threads(blasBefore);
        }
    }

    @Test
    void moreRanksThanSlots_isRefusedBeforeTheStage() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> SparkTraining.run(
                twoPartitions(), SparkTrainingConfig.of(3, tmp.resolve("three").toString()),
                TrainingRun.sharded(STEPS)));
        assertEquals("worldSize 3 needs 3 task slots at once for its barrier stage, but the cluster (local[2], "
                + "spark.task.cpus=1) has 2. Lower worldSize, lower spark.task.cpus, or give the application more "
                + "executor cores.", e.getMessage());
    }
}
