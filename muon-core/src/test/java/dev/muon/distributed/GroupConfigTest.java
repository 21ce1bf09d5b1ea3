package dev.muon.distributed;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GroupConfigTest {
    private static final Duration T = Duration.ofSeconds(5);

    static Stream<Arguments> invalidConfigs() {
        return Stream.of(
                Arguments.of("blank masterAddr", (Supplier<?>) () -> new GroupConfig(" ", 29500, 0, 1, T,
                        CollectiveBackend.GLOO), "masterAddr must not be blank, got ' '"),
                Arguments.of("port 0", (Supplier<?>) () -> GroupConfig.of("127.0.0.1", 0, 0, 1),
                        "masterPort must be in [1, 65535], got 0"),
                Arguments.of("port too large", (Supplier<?>) () -> GroupConfig.of("127.0.0.1", 70000, 0, 1),
                        "masterPort must be in [1, 65535], got 70000"),
                Arguments.of("world 0", (Supplier<?>) () -> GroupConfig.of("127.0.0.1", 29500, 0, 0),
                        "worldSize must be >= 1, got 0"),
                Arguments.of("negative rank", (Supplier<?>) () -> GroupConfig.of("127.0.0.1", 29500, -1, 2),
                        "rank must be in [0, worldSize) = [0, 2), got -1"),
                Arguments.of("rank = world", (Supplier<?>) () -> GroupConfig.of("127.0.0.1", 29500, 2, 2),
                        "rank must be in [0, worldSize) = [0, 2), got 2"),
                Arguments.of("zero timeout", (Supplier<?>) () -> GroupConfig.of("127.0.0.1", 29500, 0, 1)
                        .withTimeout(Duration.ZERO), "timeout must be positive, got PT0S"),
                Arguments.of("negative timeout", (Supplier<?>) () -> GroupConfig.of("127.0.0.1", 29500, 0, 1)
                        .withTimeout(Duration.ofSeconds(-1)), "timeout must be positive, got PT-1S"),
                Arguments.of("huge timeout", (Supplier<?>) () -> GroupConfig.of("127.0.0.1", 29500, 0, 1)
                        .withTimeout(Duration.ofDays(30)), "timeout must be at most 2147483647 ms, got PT720H"),
                Arguments.of("MASTER_ADDR missing", (Supplier<?>) () -> GroupConfig.fromEnvironment(
                        env(null, "29500", "0", "1")), "environment variable MASTER_ADDR must be set"),
                Arguments.of("RANK not a number", (Supplier<?>) () -> GroupConfig.fromEnvironment(
                        env("127.0.0.1", "29500", "one", "1")),
                        "environment variable RANK must be an integer, got 'one'"),
                Arguments.of("WORLD_SIZE missing", (Supplier<?>) () -> GroupConfig.fromEnvironment(
                        env("127.0.0.1", "29500", "0", null)), "environment variable WORLD_SIZE must be set"),
                Arguments.of("RANK outside WORLD_SIZE", (Supplier<?>) () -> GroupConfig.fromEnvironment(
                        env("127.0.0.1", "29500", "3", "2")), "rank must be in [0, worldSize) = [0, 2), got 3"));
    }

    private static Map<String, String> env(String addr, String port, String rank, String world) {
        Map<String, String> env = new HashMap<>();
        put(env, "MASTER_ADDR", addr);
        put(env, "MASTER_PORT", port);
        put(env, "RANK", rank);
        put(env, "WORLD_SIZE", world);
        return env;
    }

    private static void put(Map<String, String> env, String key, String value) {
        if (value != null) {
            env.put(key, value);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidConfigs")
    void invalidConfig_isRejected(String name, Supplier<?> make, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, make::get);
        assertTrue(e.getMessage().startsWith(expected), e.getMessage());
    }

    @Test
    void fromEnvironment_readsTorchrunVariables() {
        GroupConfig config = GroupConfig.fromEnvironment(env("10.1.2.3", "29501", "2", "4"));
        assertEquals(new GroupConfig("10.1.2.3", 29501, 2, 4, GroupConfig.DEFAULT_TIMEOUT, CollectiveBackend.GLOO),
                config);
        assertEquals(CollectiveBackend.NCCL, config.withBackend(CollectiveBackend.NCCL).backend());
        assertEquals(Duration.ofSeconds(9), config.withTimeout(Duration.ofSeconds(9)).timeout());
    }

    @Test
    void withBackendFor_picksNcclForCudaAndGlooOtherwise() {
        GroupConfig config = GroupConfig.of("127.0.0.1", 29500, 0, 1);
        assertEquals(CollectiveBackend.NCCL, config.withBackendFor(
                new org.bytedeco.pytorch.Device(org.bytedeco.pytorch.global.torch.DeviceType.CUDA)).backend());
        assertEquals(CollectiveBackend.GLOO, config.withBackend(CollectiveBackend.NCCL).withBackendFor(
                new org.bytedeco.pytorch.Device(org.bytedeco.pytorch.global.torch.DeviceType.CPU)).backend());
    }
}
