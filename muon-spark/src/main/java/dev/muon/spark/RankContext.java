package dev.muon.spark;

import dev.muon.distributed.DistributedGroup;
import dev.muon.internal.TorchNatives;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * What one rank of a {@link SparkTraining} run knows: its joined {@link DistributedGroup}, the cores Spark gave its
 * task, which attempt of the barrier stage this is, and the run's checkpoint on the shared path.
 *
 * <p>A retried stage runs the same function again on every rank; {@link #resume} makes it continue from the last
 * checkpoint, bit for bit, instead of starting over:
 * <pre>{@code
 * rank.resume(optimizer::load);                  // false on a fresh run
 * for (long step = optimizer.stepCount(); step < steps; step++) {
 *     ...
 *     if ((step + 1) % 100 == 0) rank.save(optimizer::save);
 * }
 * }</pre>
 */
public final class RankContext {
    static {
        // Before anything here loads libtorch: see TorchNatives.
        TorchNatives.extract();
    }

    /** The checkpoint's file name inside the run's directory. */
    static final String CHECKPOINT_FILE = "checkpoint.muon";
    private static final System.Logger LOG = System.getLogger(RankContext.class.getName());

    private final DistributedGroup group;
    private final int threads;
    private final int attempt;
    private final Path checkpoint;
    private final long rendezvousMillis;

    RankContext(DistributedGroup group, int threads, int attempt, Path checkpointDir, long rendezvousMillis) {
        this.group = Objects.requireNonNull(group, "group must not be null");
        this.threads = threads;
        this.attempt = attempt;
        this.checkpoint = checkpointDir.resolve(CHECKPOINT_FILE);
        this.rendezvousMillis = rendezvousMillis;
    }

    /**
     * This rank's membership of the group, joined before the function was called and closed after it returns:
     * pass it to {@code MuonAdamW.Builder.distributed} or {@code Muon.Builder.distributed}.
     *
     * @return the group
     */
    public DistributedGroup group() {
        return group;
    }

    /**
     * This rank: the barrier task's partition id.
     *
     * @return the rank, {@code 0 <= rank < worldSize}
     */
    public int rank() {
        return group.rank();
    }

    /**
     * The number of ranks.
     *
     * @return the world size
     */
    public int worldSize() {
        return group.worldSize();
    }

    /**
     * The cores Spark gave this task ({@code spark.task.cpus}), to which libtorch's intra-op threads (and with them
     * OpenBLAS's) are set for the function's call.
     *
     * @return the thread count, at least 1
     */
    public int threads() {
        return threads;
    }

    /**
     * Which attempt of the barrier stage this is: 0 first, then one more for each retry after a failed task.
     *
     * @return the stage attempt number
     */
    public int attempt() {
        return attempt;
    }

    /**
     * How long this rank's rendezvous took, from its task's start to the joined group: the port's exchange through
     * Spark's {@code allGather}, which waits for every task of the stage, and {@code DistributedGroup.join}.
     *
     * @return milliseconds
     */
    public long rendezvousMillis() {
        return rendezvousMillis;
    }

    /**
     * The run's checkpoint file on the shared path ({@code checkpointDir/checkpoint.muon}); it may not exist yet.
     *
     * @return the path
     */
    public Path checkpoint() {
        return checkpoint;
    }

    /**
     * Loads the run's checkpoint if there is one, on every rank together: each rank looks for the file, the ranks
     * compare what they saw (one collective), and all load it or none does. Call it on every rank, after the
     * optimizer is built and before the first step.
     *
     * @param load the optimizer's load, e.g. {@code optimizer::load}
     * @return whether a checkpoint was loaded
     * @throws IllegalStateException if some ranks see the file and others do not (the directory is not shared),
     *                               or the load fails
     */
    public boolean resume(Consumer<Path> load) {
        Objects.requireNonNull(load, "load must not be null");
        long[] seen = group.allGather(Files.isRegularFile(checkpoint) ? 1 : 0, "checkpoint presence");
        List<Integer> with = new ArrayList<>();
        for (int r = 0; r < seen.length; r++) {
            if (seen[r] == 1) {
                with.add(r);
            }
        }
        if (with.isEmpty()) {
            if (attempt > 0) {
                LOG.log(System.Logger.Level.WARNING, "attempt " + attempt + " of the barrier stage finds no "
                        + "checkpoint at " + checkpoint + ": training starts again from step 0");
            }
            return false;
        }
        if (with.size() != seen.length) {
            throw new IllegalStateException("checkpointDir must be one directory shared by every executor: rank(s) "
                    + with + " of " + seen.length + " see " + checkpoint + ", the others do not");
        }
        load.accept(checkpoint);
        if (group.rank() == 0) {
            LOG.log(System.Logger.Level.INFO, "attempt " + attempt + " of the barrier stage resumes from "
                    + checkpoint);
        }
        return true;
    }

    /**
     * Saves the run's checkpoint, on every rank together (the optimizer's save is a collective: rank 0 writes the
     * file atomically, the previous one stays intact if it fails).
     *
     * @param save the optimizer's save, e.g. {@code optimizer::save}
     */
    public void save(Consumer<Path> save) {
        Objects.requireNonNull(save, "save must not be null");
        save.accept(checkpoint);
    }
}
