package dev.muon.spark;

import dev.muon.internal.TorchNatives;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

import java.io.Serializable;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Trains on a Spark cluster: runs a {@link RankFunction} in one barrier stage of {@code worldSize} tasks, one rank
 * each, and returns rank 0's result to the driver.
 *
 * <p>Each task (see {@link RankContext}): rank = its partition id; the first task's executor host holds the c10d
 * rendezvous store on a port rank 0 picks and shares through {@code BarrierTaskContext.allGather}; every rank joins
 * the {@link dev.muon.distributed.DistributedGroup} with the config's timeout; libtorch's intra-op threads (and
 * OpenBLAS's) are set to the task's cores, {@code spark.task.cpus}; then the function runs on the rank's partition.
 *
 * <p>Faults as Spark has them: a task that fails or is killed fails the barrier stage, Spark kills the other tasks
 * and runs the whole stage again, up to {@code spark.stage.maxConsecutiveAttempts} times (4 by default); the
 * function resumes from the run's last checkpoint with {@link RankContext#resume}. Refused before anything runs,
 * naming the setting: {@code spark.dynamicAllocation.enabled}, fewer task slots than {@code worldSize}, and
 * {@code spark.ssl.enabled} (c10d's traffic is plain TCP) unless allowed.
 *
 * <pre>{@code
 * Metrics metrics = SparkTraining.run(images, SparkTrainingConfig.of(2, "/shared/runs/1"), (rank, shard) -> {
 *     MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
 *             .distributed(rank.group(), ShardingConfig.defaults()).build();
 *     rank.resume(optimizer::load);
 *     ...
 *     return metrics;
 * });
 * }</pre>
 */
public final class SparkTraining {
    static {
        // The first type of ours a Spark driver may touch: see TorchNatives.
        TorchNatives.extract();
    }

    private static final System.Logger LOG = System.getLogger(SparkTraining.class.getName());

    private SparkTraining() {
    }

    /**
     * Trains on {@code data}: rank {@code r} gets partition {@code r}. Data with another number of partitions is
     * repartitioned to {@code worldSize} first, through a shuffle whose record order Spark does not fix: for a
     * bit-exact resume, hand in {@code worldSize} partitions.
     *
     * <p>When the stage fails more often than Spark retries it, Spark's {@code SparkException} comes out of this
     * call as out of Spark's own {@code collect()} (undeclared, as Scala throws it); its message holds the last
     * failure, e.g. the join's deadline naming the rank that never arrived.
     *
     * @param data     the training data
     * @param config   the ranks, the checkpoint directory, the timeout
     * @param function each rank's training
     * @param <T>      the data's element type
     * @param <R>      the result's type
     * @return rank 0's result (null if it returned null)
     * @throws IllegalStateException if barrier mode cannot run here, naming the setting
     */
    public static <T, R extends Serializable> R run(JavaRDD<T> data, SparkTrainingConfig config,
                                                    RankFunction<T, R> function) {
        return run(data, config, function, (rank, attempt) -> { });
    }

    /**
     * {@link #run(JavaRDD, SparkTrainingConfig, RankFunction)} over a {@link Dataset}'s rows.
     *
     * @param data     the training data
     * @param config   the ranks, the checkpoint directory, the timeout
     * @param function each rank's training
     * @param <T>      the data's element type
     * @param <R>      the result's type
     * @return rank 0's result (null if it returned null)
     * @throws IllegalStateException if barrier mode cannot run here, naming the setting
     */
    public static <T, R extends Serializable> R run(Dataset<T> data, SparkTrainingConfig config,
                                                    RankFunction<T, R> function) {
        Objects.requireNonNull(data, "data must not be null");
        return run(data.javaRDD(), config, function);
    }

    static <T, R extends Serializable> R run(JavaRDD<T> data, SparkTrainingConfig config, RankFunction<T, R> function,
                                             RankRunner.JoinHook hook) {
        Objects.requireNonNull(data, "data must not be null");
        Objects.requireNonNull(config, "config must not be null");
        Objects.requireNonNull(function, "function must not be null");
        SparkContext sc = data.context();
        preflight(sc, config);
        JavaRDD<T> shards = data;
        if (data.getNumPartitions() != config.worldSize()) {
            LOG.log(System.Logger.Level.INFO, "the data has " + data.getNumPartitions() + " partitions, worldSize is "
                    + config.worldSize() + ": repartitioning (a shuffle: the record order within a rank's shard is "
                    + "then Spark's, not fixed)");
            shards = data.repartition(config.worldSize());
        }
        @SuppressWarnings("unchecked")
        ClassTag<RankResult<R>> tag = (ClassTag<RankResult<R>>) (ClassTag<?>) ClassTag$.MODULE$.apply(RankResult.class);
        RDD<RankResult<R>> barrier = shards.rdd().barrier()
                .mapPartitions(new RankRunner<>(config, function, hook), false, tag);
        String interruptBefore = sc.getLocalProperty("spark.job.interruptOnCancel");
        String descriptionBefore = sc.getLocalProperty("spark.job.description");
        // A killed barrier task is interrupted, so a rank waiting in Java (Spark's allGather, a sleep) ends with
        // the stage; a rank inside a collective ends at the group's timeout at the latest.
        sc.setLocalProperty("spark.job.interruptOnCancel", "true");
        sc.setLocalProperty("spark.job.description", "muon-spark: " + config.worldSize() + " ranks, checkpoint "
                + config.checkpointDir());
        try {
            // The shuffle after it makes the barrier stage a ShuffleMapStage, which Spark retries whole when a task
            // fails; a failed barrier ResultStage would only be aborted.
            List<RankResult<R>> results = barrier.toJavaRDD().repartition(1).collect();
            if (results.size() != 1) {
                throw new IllegalStateException("expected rank 0's result alone, got " + results.size());
            }
            return results.get(0).value();
        } finally {
            sc.setLocalProperty("spark.job.interruptOnCancel", interruptBefore);
            sc.setLocalProperty("spark.job.description", descriptionBefore);
        }
    }

    private static void preflight(SparkContext sc, SparkTrainingConfig config) {
        int slots = sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile());
        Optional<String> refusal = BarrierPreflight.refusal(sc.getConf(), sc.master(), config.worldSize(), slots,
                config.allowUnencrypted());
        long deadline = System.nanoTime() + config.timeout().toNanos();
        // On a cluster, executors register after the application starts: wait for the slots (never in local mode,
        // where they are all there from the start).
        while (refusal.isPresent() && slots < config.worldSize() && !sc.isLocal() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            slots = sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile());
            refusal = BarrierPreflight.refusal(sc.getConf(), sc.master(), config.worldSize(), slots,
                    config.allowUnencrypted());
        }
        if (refusal.isPresent()) {
            throw new IllegalStateException(refusal.get());
        }
    }
}
