package dev.muon.spark;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import dev.muon.internal.TorchNatives;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;

/**
 * One barrier task of {@link SparkTraining}: it finds its rank, meets the others, gives libtorch its task's cores,
 * calls the user's function and hands rank 0's result on.
 *
 * <p>The rendezvous, as PySpark's TorchDistributor does it: rank = partition id; the first task's executor host is
 * the store's address; rank 0 picks a free port there and shares it through {@code BarrierTaskContext.allGather},
 * which every task reaches. From there {@link DistributedGroup#join} runs with the run's timeout, so a rank that
 * never arrives fails the others within it.
 *
 * @param <T> the data's element type
 * @param <R> the result's type
 */
final class RankRunner<T, R extends Serializable>
        extends AbstractFunction1<scala.collection.Iterator<T>, scala.collection.Iterator<RankResult<R>>>
        implements Serializable {
    private static final long serialVersionUID = 1L;

    static {
        // The first class of ours an executor loads (Spark deserializes it with the task), before it touches
        // libtorch: see TorchNatives.
        TorchNatives.extract();
    }

    /** A test's way to hold a rank back before it joins; a no-op otherwise. */
    @FunctionalInterface
    interface JoinHook extends Serializable {
        void beforeJoin(int rank, int attempt) throws InterruptedException;
    }

    private final SparkTrainingConfig config;
    private final RankFunction<T, R> function;
    private final JoinHook hook;

    RankRunner(SparkTrainingConfig config, RankFunction<T, R> function, JoinHook hook) {
        this.config = config;
        this.function = function;
        this.hook = hook;
    }

    // RDDBarrier.mapPartitions, not mapPartitionsWithEvaluator: the evaluator's RDD does not keep the barrier
    // (Spark 4.2 runs it as plain tasks, without a BarrierTaskContext).
    @Override
    public scala.collection.Iterator<RankResult<R>> apply(scala.collection.Iterator<T> partition) {
        List<RankResult<R>> out;
        try {
            out = runRank(CollectionConverters.asJava(partition));
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            // Spark records the task's exception as its failure reason: keep the function's own.
            throw new IllegalStateException("rank " + BarrierTaskContext.get().partitionId() + " failed: " + e, e);
        }
        return CollectionConverters.asScala(out.iterator());
    }

    private List<RankResult<R>> runRank(Iterator<T> shard) throws Exception {
        long started = System.nanoTime();
        BarrierTaskContext task = BarrierTaskContext.get();
        int rank = task.partitionId();
        int attempt = task.stageAttemptNumber();
        BarrierTaskInfo[] infos = task.getTaskInfos();
        if (infos.length != config.worldSize()) {
            throw new IllegalStateException("the barrier stage has " + infos.length + " tasks, worldSize is "
                    + config.worldSize());
        }
        Path dir = Path.of(config.checkpointDir());
        Files.createDirectories(dir);
        String host = hostOf(infos[0].address());
        String[] ports = task.allGather(rank == 0 ? String.valueOf(freePort(host)) : "");
        int port = Integer.parseInt(ports[0]);
        hook.beforeJoin(rank, attempt);
        int threads = Math.max(1, task.cpus());
        TaskThreads.enter(threads);
        try (DistributedGroup group = DistributedGroup.join(GroupConfig.of(host, port, rank, config.worldSize())
                .withTimeout(config.timeout()))) {
            long rendezvous = (System.nanoTime() - started) / 1_000_000;
            R value = function.train(new RankContext(group, threads, attempt, dir, rendezvous), shard);
            return rank == 0 ? List.of(new RankResult<>(rank, attempt, value)) : Collections.emptyList();
        } finally {
            TaskThreads.exit();
        }
    }

    /** The host of a barrier task's {@code host:port} address (IPv6 hosts keep their colons). */
    static String hostOf(String address) {
        int colon = address.lastIndexOf(':');
        String host = colon < 0 ? address : address.substring(0, colon);
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }

    /** A port free on {@code host} a moment ago: rank 0's store binds it (a lost race fails the attempt). */
    private static int freePort(String host) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(host, 0));
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port on rank 0's host " + host + " for the rendezvous store", e);
        }
    }
}
