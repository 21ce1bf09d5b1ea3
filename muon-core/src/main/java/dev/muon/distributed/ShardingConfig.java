package dev.muon.distributed;

import dev.muon.internal.TorchNatives;
import java.util.Objects;

/**
 * How an optimizer shards its Muon work over a {@link DistributedGroup}.
 *
 * <table>
 *   <caption>Defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>why</th></tr>
 *   <tr><td>{@code averageGradients}</td><td>true</td><td>libtorch's C++ API has no DDP, so most JVM training
 *   loops have nobody else to average the gradients; turn it off if yours does</td></tr>
 *   <tr><td>{@code syncPrecision}</td><td>{@link SyncPrecision#PARAMETER_DTYPE}</td><td>exact; bfloat16 halves
 *   the traffic</td></tr>
 * </table>
 *
 * @param averageGradients whether the optimizer all-reduces and averages every gradient before its step
 * @param syncPrecision    the precision of the parameter broadcast after the Muon update
 */
public record ShardingConfig(boolean averageGradients, SyncPrecision syncPrecision) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates the fields.
     *
     * @throws NullPointerException if {@code syncPrecision} is null
     */
    public ShardingConfig {
        Objects.requireNonNull(syncPrecision, "syncPrecision must not be null");
    }

    /**
     * The defaults in the table above.
     *
     * @return the defaults
     */
    public static ShardingConfig defaults() {
        return new ShardingConfig(true, SyncPrecision.PARAMETER_DTYPE);
    }

    /**
     * A copy with another gradient-averaging setting.
     *
     * @param average whether to all-reduce and average gradients
     * @return the copy
     */
    public ShardingConfig withAverageGradients(boolean average) {
        return new ShardingConfig(average, syncPrecision);
    }

    /**
     * A copy with another sync precision.
     *
     * @param precision the precision
     * @return the copy
     * @throws NullPointerException if {@code precision} is null
     */
    public ShardingConfig withSyncPrecision(SyncPrecision precision) {
        return new ShardingConfig(averageGradients, precision);
    }
}
