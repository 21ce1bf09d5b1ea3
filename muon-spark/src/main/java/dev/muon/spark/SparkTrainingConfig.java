package dev.muon.spark;

import dev.muon.internal.TorchNatives;

import java.io.Serializable;
import java.time.Duration;
import java.util.Objects;

/**
 * How {@link SparkTraining} runs a training function on a Spark cluster: how many ranks, where their checkpoint
 * lives, how long the ranks wait for each other, and whether their traffic may go unencrypted.
 *
 * <table>
 * <caption>Defaults</caption>
 * <tr><th>field</th><th>default</th><th>why</th></tr>
 * <tr><td>{@code worldSize}</td><td>none: given</td><td>the number of barrier tasks, one rank each</td></tr>
 * <tr><td>{@code checkpointDir}</td><td>none: given</td><td>a retried stage resumes from the checkpoint there, so
 * it must be one path that every executor reads and writes (a shared file system)</td></tr>
 * <tr><td>{@code timeout}</td><td>{@link dev.muon.distributed.GroupConfig#DEFAULT_TIMEOUT} (5 minutes)</td><td>the
 * join's deadline and every collective's: a rank that never arrives fails the stage after it</td></tr>
 * <tr><td>{@code allowUnencrypted}</td><td>false</td><td>with {@code spark.ssl.enabled}, c10d's plain TCP is
 * refused unless allowed here</td></tr>
 * </table>
 *
 * <pre>{@code
 * SparkTrainingConfig config = SparkTrainingConfig.of(2, "/shared/runs/fashion-1")
 *         .withTimeout(Duration.ofMinutes(2));
 * }</pre>
 *
 * @param worldSize        the number of ranks, one barrier task each, at least 1
 * @param checkpointDir    the directory of the run's checkpoint, shared by every executor; not blank
 * @param timeout          the join's deadline and every collective's, positive, at most {@code Integer.MAX_VALUE}
 *                         ms
 * @param allowUnencrypted whether to run under {@code spark.ssl.enabled=true}, whose encryption c10d's traffic does
 *                         not get
 */
public record SparkTrainingConfig(int worldSize, String checkpointDir, Duration timeout, boolean allowUnencrypted)
        implements Serializable {
    static {
        // The first type of ours a Spark driver touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException if a field breaks its rule
     * @throws NullPointerException     if a reference is null
     */
    public SparkTrainingConfig {
        Objects.requireNonNull(checkpointDir, "checkpointDir must not be null");
        Objects.requireNonNull(timeout, "timeout must not be null");
        if (worldSize < 1) {
            throw new IllegalArgumentException("worldSize must be >= 1, got " + worldSize);
        }
        if (checkpointDir.isBlank()) {
            throw new IllegalArgumentException("checkpointDir must not be blank, got '" + checkpointDir + "'");
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        if (timeout.toMillis() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("timeout must be at most " + Integer.MAX_VALUE + " ms, got "
                    + timeout);
        }
    }

    /**
     * {@code worldSize} ranks with their checkpoint in {@code checkpointDir}, the default timeout, and no
     * unencrypted traffic under {@code spark.ssl.enabled}.
     *
     * @param worldSize     the number of ranks
     * @param checkpointDir the shared checkpoint directory
     * @return the config
     * @throws IllegalArgumentException if a value breaks its rule
     */
    public static SparkTrainingConfig of(int worldSize, String checkpointDir) {
        return new SparkTrainingConfig(worldSize, checkpointDir,
                dev.muon.distributed.GroupConfig.DEFAULT_TIMEOUT, false);
    }

    /**
     * A copy with another timeout.
     *
     * @param newTimeout the join's deadline and every collective's
     * @return the copy
     * @throws IllegalArgumentException if the timeout is not positive
     */
    public SparkTrainingConfig withTimeout(Duration newTimeout) {
        return new SparkTrainingConfig(worldSize, checkpointDir, newTimeout, allowUnencrypted);
    }

    /**
     * A copy that runs, or refuses to run, under {@code spark.ssl.enabled=true}: the rendezvous store and Gloo's
     * collectives are plain TCP whatever Spark encrypts.
     *
     * @param allow true to accept unencrypted c10d traffic on a network you trust
     * @return the copy
     */
    public SparkTrainingConfig withUnencryptedTraffic(boolean allow) {
        return new SparkTrainingConfig(worldSize, checkpointDir, timeout, allow);
    }
}
