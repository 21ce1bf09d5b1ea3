package dev.muon.distributed;

import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.global.torch;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * Where a process group meets and who this process is in it: the settings torchrun passes as environment
 * variables, plus the timeout of every collective and the backend.
 *
 * <p>Rank 0 hosts the rendezvous store at {@code masterAddr:masterPort}; the others connect to it.
 *
 * @param masterAddr the host of rank 0's store (an address or a host name)
 * @param masterPort the store's TCP port, 1 to 65535
 * @param rank       this process's rank, {@code 0 <= rank < worldSize}
 * @param worldSize  the number of processes, at least 1
 * @param timeout    how long the rendezvous and each collective may take before they fail, positive
 * @param backend    the c10d backend
 */
public record GroupConfig(String masterAddr, int masterPort, int rank, int worldSize, Duration timeout,
                          CollectiveBackend backend) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * The timeout when none is given: c10d's own default of 30 minutes leaves a hung job unnoticed for long, and 5
     * minutes still covers a slow step or a checkpoint of a large model. Raise it for steps slower than that.
     */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);

    /**
     * Validates every field.
     *
     * @throws IllegalArgumentException if a field breaks its rule
     * @throws NullPointerException     if a reference is null
     */
    public GroupConfig {
        Objects.requireNonNull(masterAddr, "masterAddr must not be null");
        Objects.requireNonNull(timeout, "timeout must not be null");
        Objects.requireNonNull(backend, "backend must not be null");
        if (masterAddr.isBlank()) {
            throw new IllegalArgumentException("masterAddr must not be blank, got '" + masterAddr + "'");
        }
        if (masterPort < 1 || masterPort > 65535) {
            throw new IllegalArgumentException("masterPort must be in [1, 65535], got " + masterPort);
        }
        if (worldSize < 1) {
            throw new IllegalArgumentException("worldSize must be >= 1, got " + worldSize);
        }
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank must be in [0, worldSize) = [0, " + worldSize + "), got "
                    + rank);
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
     * A Gloo group with the default timeout.
     *
     * @param masterAddr rank 0's host
     * @param masterPort rank 0's store port
     * @param rank       this process's rank
     * @param worldSize  the number of processes
     * @return the config
     * @throws IllegalArgumentException if a value breaks its rule
     */
    public static GroupConfig of(String masterAddr, int masterPort, int rank, int worldSize) {
        return new GroupConfig(masterAddr, masterPort, rank, worldSize, DEFAULT_TIMEOUT, CollectiveBackend.GLOO);
    }

    /**
     * Reads {@code MASTER_ADDR}, {@code MASTER_PORT}, {@code RANK} and {@code WORLD_SIZE} from this process's
     * environment, as torchrun sets them; Gloo, default timeout.
     *
     * @return the config
     * @throws IllegalArgumentException if a variable is missing or not a valid value
     */
    public static GroupConfig fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    /**
     * {@link #fromEnvironment()} over a given map of variables.
     *
     * @param env the variables
     * @return the config
     * @throws IllegalArgumentException if a variable is missing or not a valid value
     */
    public static GroupConfig fromEnvironment(Map<String, String> env) {
        Objects.requireNonNull(env, "env must not be null");
        String addr = required(env, "MASTER_ADDR");
        int port = integer(env, "MASTER_PORT");
        int rank = integer(env, "RANK");
        int world = integer(env, "WORLD_SIZE");
        return of(addr, port, rank, world);
    }

    private static String required(Map<String, String> env, String name) {
        String value = env.get(name);
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException("environment variable " + name + " must be set (torchrun sets "
                    + "MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE), got " + (value == null ? "nothing" : "'"
                    + value + "'"));
        }
        return value.trim();
    }

    private static int integer(Map<String, String> env, String name) {
        String value = required(env, name);
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("environment variable " + name + " must be an integer, got '"
                    + value + "'", e);
        }
    }

    /**
     * A copy with another timeout.
     *
     * @param newTimeout the timeout, positive
     * @return the copy
     * @throws IllegalArgumentException if the timeout is not positive
     */
    public GroupConfig withTimeout(Duration newTimeout) {
        return new GroupConfig(masterAddr, masterPort, rank, worldSize, newTimeout, backend);
    }

    /**
     * A copy with the backend for tensors on {@code device}: NCCL for CUDA, Gloo for everything else.
     *
     * @param device where the parameters live
     * @return the copy
     */
    public GroupConfig withBackendFor(Device device) {
        Objects.requireNonNull(device, "device must not be null");
        boolean cuda = device.type().value == torch.DeviceType.CUDA.value;
        return withBackend(cuda ? CollectiveBackend.NCCL : CollectiveBackend.GLOO);
    }

    /**
     * A copy with another backend.
     *
     * @param newBackend the backend
     * @return the copy
     */
    public GroupConfig withBackend(CollectiveBackend newBackend) {
        return new GroupConfig(masterAddr, masterPort, rank, worldSize, timeout, newBackend);
    }
}
