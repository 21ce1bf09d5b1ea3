package dev.muon.examples.spark;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.distributed.ShardingConfig;
import dev.muon.examples.AssignmentLog;
import dev.muon.examples.FashionMlp;
import dev.muon.examples.FashionMnistData;
import dev.muon.spark.RankContext;
import dev.muon.spark.RankFunction;
import dev.muon.spark.SparkTraining;
import dev.muon.spark.SparkTrainingConfig;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;

/**
 * Fashion-MNIST's MLP (the main job's {@link FashionMlp}) trained with a distributed {@code MuonAdamW} on Spark, at
 * W = 2 by default in local mode: the RDD holds the training rows' ids, {@code W} partitions, one per rank; each rank
 * reads the images of its ids from the data set's path (Debian's {@code dataset-fashion-mnist}, which every machine
 * of a cluster would have, or {@code --data DIR}; a generated stand-in without either). Rank 0 prints the assignment
 * table once and test accuracy per epoch; a checkpoint after every epoch lets a retried stage go on from there.
 * The driver prints the table of epochs and what the barrier stage's start-up and rendezvous cost against the steps.
 *
 * <p>Run: {@code mvn -B -q -pl examples-spark -am -Ptrain-spark -DskipTests package
 * -Dexample.args="--epochs 2"}. Options: {@code --master URL} (local[2]), {@code --world W} (2), {@code --epochs N}
 * (2), {@code --batch B} (global rows per step, 128), {@code --data DIR}, {@code --checkpoint DIR} (a new folder
 * under the system's temporary folder).
 */
public final class FashionMnistSpark {
    private FashionMnistSpark() {
    }

    /**
     * One epoch as rank 0 saw it.
     *
     * @param epoch     1-based
     * @param trainLoss the mean training loss of rank 0's shard over the epoch
     * @param accuracy  test accuracy, 0 to 1
     * @param seconds   training seconds so far (evaluation excluded)
     */
    public record Epoch(int epoch, double trainLoss, double accuracy, double seconds) implements Serializable {
    }

    /**
     * What rank 0 hands back.
     *
     * @param epochs        the epochs trained by the last attempt
     * @param enteredMillis the wall clock when rank 0's function started (the group joined)
     * @param rendezvousMillis rank 0's rendezvous: its task's start to the joined group
     * @param trainMillis   the function's time from then on
     * @param steps         the steps the last attempt ran
     * @param attempt       the barrier stage's attempt
     * @param source        where the images came from
     */
    public record Report(List<Epoch> epochs, long enteredMillis, long rendezvousMillis, long trainMillis, long steps, int attempt,
                         String source) implements Serializable {
    }

    /** One rank's training. */
    record Trainer(int epochs, int globalBatch, String dataDir) implements RankFunction<Integer, Report> {
        @Override
        public Report train(RankContext rank, Iterator<Integer> shard) {
            long entered = System.currentTimeMillis();
            List<Integer> ids = new ArrayList<>();
            shard.forEachRemaining(ids::add);
            FashionMnistData data = FashionMnistData.locate(Optional.ofNullable(dataDir).map(Path::of),
                    Path.of(FashionMnistData.DEBIAN_DIR), 1);
            int batch = globalBatch / rank.worldSize();
            long stepsPerEpoch = ids.size() / batch;
            try (PointerScope scope = new PointerScope()) {
                Tensor idx = Tensor.create(ids.stream().mapToLong(Integer::longValue).toArray());
                Tensor images = data.trainImages().index_select(0, idx);
                Tensor labels = data.trainLabels().index_select(0, idx);
                FashionMlp model;
                // In local mode the ranks are threads of one JVM and share libtorch's default generator.
                synchronized (FashionMnistSpark.class) {
                    torch.manual_seed(1);
                    model = new FashionMlp();
                }
                MuonAdamW optimizer = AssignmentLog.quietly(() -> MuonAdamW.builder(model.named_parameters())
                        .adamW(AdamWConfig.defaults().withLr(1e-3))
                        .muon(MuonConfig.defaults().withLr(1e-3).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW))
                        .distributed(rank.group(), ShardingConfig.defaults())
                        .build());
                if (rank.rank() == 0) {
                    System.out.println("W = " + rank.worldSize() + ", " + rank.threads() + " thread(s) per rank, "
                            + batch + " rows per rank and step, " + stepsPerEpoch + " steps per epoch; attempt "
                            + rank.attempt() + "\n" + optimizer.assignment());
                }
                rank.resume(optimizer::load);
                long start = optimizer.stepCount();
                long trainNanos = 0;
                double lossSum = 0;
                List<Epoch> epochsDone = new ArrayList<>();
                for (long step = start; step < epochs * stepsPerEpoch; step++) {
                    long t = System.nanoTime();
                    try (PointerScope stepScope = new PointerScope()) {
                        long first = (step % stepsPerEpoch) * batch;
                        optimizer.zeroGrad();
                        Tensor loss = torch.cross_entropy_loss(model.forward(images.narrow(0, first, batch)),
                                labels.narrow(0, first, batch));
                        loss.backward();
                        optimizer.step();
                        lossSum += loss.item_double();
                    }
                    trainNanos += System.nanoTime() - t;
                    if ((step + 1) % stepsPerEpoch == 0) {
                        rank.save(optimizer::save);
                        if (rank.rank() == 0) {
                            int epoch = (int) ((step + 1) / stepsPerEpoch);
                            long counted = Math.min(stepsPerEpoch, step + 1 - start);
                            Epoch e = new Epoch(epoch, lossSum / counted, accuracy(model, data),
                                    trainNanos / 1e9);
                            System.out.printf("epoch %d: train loss %.4f, test accuracy %.2f %%, %.1f s%n",
                                    e.epoch(), e.trainLoss(), 100 * e.accuracy(), e.seconds());
                            epochsDone.add(e);
                        }
                        lossSum = 0;
                    }
                }
                return new Report(epochsDone, entered, rank.rendezvousMillis(), System.currentTimeMillis() - entered,
                        epochs * stepsPerEpoch - start, rank.attempt(), data.source());
            }
        }
    }

    private static double accuracy(FashionMlp model, FashionMnistData data) {
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            Tensor logits = model.forward(data.testImages());
            return torch.argmax(logits, new LongOptional(1), false).eq(data.testLabels()).sum().item_double()
                    / data.testLabels().size(0);
        }
    }

    /**
     * Trains and prints.
     *
     * @param args the options above
     * @throws Exception if the run fails
     */
    public static void main(String[] args) throws Exception {
        String master = "local[2]";
        int world = 2;
        int epochs = 2;
        int batch = 128;
        String dataDir = null;
        Path checkpoint = null;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            String value = args[i + 1];
            switch (args[i]) {
                case "--master" -> master = value;
                case "--world" -> world = Integer.parseInt(value);
                case "--epochs" -> epochs = Integer.parseInt(value);
                case "--batch" -> batch = Integer.parseInt(value);
                case "--data" -> dataDir = value;
                case "--checkpoint" -> checkpoint = Path.of(value);
                default -> throw new IllegalArgumentException("unknown option " + args[i] + "; options: --master, "
                        + "--world, --epochs, --batch, --data, --checkpoint");
            }
        }
        if (checkpoint == null) {
            checkpoint = Files.createTempDirectory("muon-spark-fashion-");
        }
        SparkSession.Builder builder = SparkSession.builder().master(master).appName("muon-fashion-mnist-spark")
                .config("spark.ui.enabled", "false");
        if (master.startsWith("local")) {
            builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1");
        }
        SparkSession spark = builder.getOrCreate();
        try {
            spark.sparkContext().setLogLevel("WARN");
            FashionMnistData data = FashionMnistData.locate(Optional.ofNullable(dataDir).map(Path::of),
                    Path.of(FashionMnistData.DEBIAN_DIR), 1);
            int n = (int) data.trainImages().size(0);
            JavaRDD<Integer> rows = JavaSparkContext.fromSparkContext(spark.sparkContext())
                    .parallelize(IntStream.range(0, n).boxed().toList(), world);
            SparkTrainingConfig config = SparkTrainingConfig.of(world, checkpoint.toString())
                    .withTimeout(Duration.ofMinutes(2));
            long called = System.currentTimeMillis();
            Report report = SparkTraining.run(rows, config, new Trainer(epochs, batch, dataDir));
            long total = System.currentTimeMillis() - called;
            System.out.println("\n| epoch | train loss (rank 0) | test accuracy | training s |");
            System.out.println("| --- | --- | --- | --- |");
            for (Epoch e : report.epochs()) {
                System.out.printf("| %d | %.4f | %.2f %% | %.1f |%n", e.epoch(), e.trainLoss(), 100 * e.accuracy(),
                        e.seconds());
            }
            long startup = report.enteredMillis() - called;
            System.out.printf("%nbarrier stage start-up and rendezvous: %d ms (from run() to rank 0's function; "
                            + "of it the rendezvous, allGather and join: %d ms); the function: %d ms for %d steps (%.1f ms per step, evaluation and checkpoints "
                            + "included); start-up = %.1f steps; whole run() %d ms; attempt %d; data: %s; "
                            + "checkpoint: %s%n", startup, report.rendezvousMillis(), report.trainMillis(), report.steps(),
                    (double) report.trainMillis() / report.steps(), startup * (double) report.steps()
                            / report.trainMillis(), total, report.attempt(), report.source(), checkpoint);
        } finally {
            spark.stop();
        }
    }
}
