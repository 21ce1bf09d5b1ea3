package dev.muon.spark;

import java.io.Serializable;
import java.util.Iterator;

/**
 * The training code of one rank: what every barrier task runs, with its rank's group and its partition of the
 * data. It builds the model and the optimizer exactly as on one machine, plus
 * {@code .distributed(rank.group(), ShardingConfig.defaults())}, resumes with {@link RankContext#resume}, saves
 * with {@link RankContext#save}, and returns what the driver should get: rank 0's return value is
 * {@link SparkTraining#run}'s, the others' are dropped.
 *
 * <p>Spark serializes the function to every executor, so what it captures must be {@link Serializable}.
 *
 * @param <T> the data's element type
 * @param <R> the result's type
 */
@FunctionalInterface
public interface RankFunction<T, R extends Serializable> extends Serializable {
    /**
     * Trains this rank.
     *
     * @param rank  this rank's group, threads, attempt and checkpoint
     * @param shard this rank's partition of the data (partition {@code rank.rank()})
     * @return this rank's result; rank 0's goes to the driver (null allowed)
     * @throws Exception any failure: it fails this task, Spark then fails the barrier stage and retries it whole
     */
    R train(RankContext rank, Iterator<T> shard) throws Exception;
}
