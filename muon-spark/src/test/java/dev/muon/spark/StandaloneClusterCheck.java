package dev.muon.spark;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

import java.io.ObjectInputStream;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The local tests' bit-identities on a standalone Spark cluster (a master and two workers of one core each, separate
 * JVMs, started from the jars of this machine; docs/distributed.md has the commands): not run in CI, where one JVM's
 * {@code local[2]} stands in for it. Exits 0 when every check holds, 1 otherwise.
 *
 * <p>Arguments: {@code masterUrl workDir}.
 */
public final class StandaloneClusterCheck {
    private StandaloneClusterCheck() {
    }

    public static void main(String[] args) throws Exception {
        String master = args[0];
        Path dir = Files.createDirectories(Path.of(args[1]));
        SparkConf conf = new SparkConf().setMaster(master).setAppName("muon-spark-standalone-check")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                // The executors run on this machine: the driver's class path is theirs.
                .set("spark.executor.extraClassPath", System.getProperty("java.class.path"))
                .set("spark.executor.cores", "1")
                .set("spark.executor.memory", "1g")
                .set("spark.executorEnv.OMP_WAIT_POLICY", "PASSIVE")
                .set("spark.executorEnv.OPENBLAS_THREAD_TIMEOUT", "4")
                .set("spark.stage.maxConsecutiveAttempts", "2");
        SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
        boolean ok = true;
        try {
            JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
            List<Sample> data = SparkTrainingTest.data();
            int steps = SparkTrainingTest.STEPS;
            long t = System.nanoTime();
            TrainingRun.Result sharded = SparkTraining.run(jsc.parallelize(data, 2), SparkTrainingConfig.of(2,
                    dir.resolve("sharded").toString()).withTimeout(Duration.ofSeconds(60)), TrainingRun.sharded(steps));
            System.out.printf("W = 2 sharded on the cluster: %d ms%n", (System.nanoTime() - t) / 1_000_000);
            TrainingRun.Result byHand = byHand(dir.resolve("by-hand"), steps);
            ok &= report("cluster W = 2 == two JVMs by hand", byHand, sharded);
            TrainingRun.Result two = SparkTraining.run(jsc.parallelize(data, 2), SparkTrainingConfig.of(2,
                    dir.resolve("replicated-2").toString()), TrainingRun.replicated(steps, data));
            TrainingRun.Result one = SparkTraining.run(jsc.parallelize(data, 1), SparkTrainingConfig.of(1,
                    dir.resolve("replicated-1").toString()), TrainingRun.replicated(steps, data));
            ok &= report("cluster W = 2 == cluster W = 1, same global batch", one, two);
            Path failing = Files.createDirectories(dir.resolve("failing-once"));
            TrainingRun.Result retried = SparkTraining.run(jsc.parallelize(data, 2), SparkTrainingConfig.of(2,
                    failing.resolve("checkpoints").toString()).withTimeout(Duration.ofSeconds(60)),
                    TrainingRun.sharded(steps).failingOnce(1, 5, failing.resolve("failed-once")));
            System.out.printf("retried: attempt %d, resumed at step %d%n", retried.attempt(), retried.startStep());
            ok &= retried.attempt() == 1 && retried.startStep() == 4;
            ok &= report("cluster W = 2, rank 1 failing once, retried == uninterrupted", sharded, retried);
        } finally {
            spark.stop();
        }
        System.out.println(ok ? "ALL CHECKS HOLD" : "A CHECK FAILED");
        System.exit(ok ? 0 : 1);
    }

    private static boolean report(String what, TrainingRun.Result expected, TrainingRun.Result actual) {
        boolean same = expected.parameters().keySet().equals(actual.parameters().keySet());
        for (Map.Entry<String, double[]> e : expected.parameters().entrySet()) {
            same &= Arrays.equals(e.getValue(), actual.parameters().get(e.getKey()));
        }
        System.out.println((same ? "bit-identical: " : "DIFFERENT: ") + what);
        return same;
    }

    private static TrainingRun.Result byHand(Path dir, int steps) throws Exception {
        Files.createDirectories(dir);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        List<Process> ranks = new ArrayList<>();
        for (int rank = 0; rank < 2; rank++) {
            ProcessBuilder builder = new ProcessBuilder(java, "-Xmx384m", "-cp", System.getProperty("java.class.path"),
                    HandLaunchedRank.class.getName(), String.valueOf(rank), "2", String.valueOf(port), dir.toString(),
                    String.valueOf(steps));
            builder.redirectErrorStream(true).redirectOutput(dir.resolve("rank" + rank + ".log").toFile());
            builder.environment().put("OMP_WAIT_POLICY", "PASSIVE");
            ranks.add(builder.start());
        }
        for (Process p : ranks) {
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("a rank launched by hand failed; logs in " + dir);
            }
        }
        try (ObjectInputStream in = new ObjectInputStream(Files.newInputStream(dir.resolve("result-hand.bin")))) {
            return (TrainingRun.Result) in.readObject();
        }
    }
}
