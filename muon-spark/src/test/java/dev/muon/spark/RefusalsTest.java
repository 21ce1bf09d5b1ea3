package dev.muon.spark;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.Optional;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What barrier mode cannot run, one row per setting, and the config's bad values, one row per field. */
class RefusalsTest {
    static Stream<Arguments> refusals() {
        return Stream.of(
                Arguments.of("dynamic allocation", new SparkConf().set("spark.dynamicAllocation.enabled", "true"),
                        2, 4, false, "spark.dynamicAllocation.enabled is true: a barrier stage needs all its 2 tasks "
                                + "running at once, which Spark cannot promise while it adds and removes executors "
                                + "(SPARK-24942). Set spark.dynamicAllocation.enabled=false for this application."),
                Arguments.of("SSL", new SparkConf().set("spark.ssl.enabled", "true"), 2, 4, false,
                        "spark.ssl.enabled is true, but the ranks' c10d traffic (the rendezvous store and Gloo's "
                                + "collectives, plain TCP) cannot be encrypted. On a network you trust, allow it with "
                                + "SparkTrainingConfig.withUnencryptedTraffic(true); otherwise set "
                                + "spark.ssl.enabled=false."),
                Arguments.of("fewer slots than ranks", new SparkConf().set("spark.task.cpus", "2"), 4, 3, false,
                        "worldSize 4 needs 4 task slots at once for its barrier stage, but the cluster "
                                + "(spark://m:7077, spark.task.cpus=2) has 3. Lower worldSize, lower spark.task.cpus, "
                                + "or give the application more executor cores."));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void barrierModeLimit_isRefused_namingTheSetting(String what, SparkConf conf, int world, int slots,
                                                     boolean allowUnencrypted, String message) {
        assertEquals(Optional.of(message), BarrierPreflight.refusal(conf, "spark://m:7077", world, slots,
                allowUnencrypted));
    }

    @Test
    void ssl_allowedExplicitly_andEnoughSlots_runs() {
        assertEquals(Optional.empty(), BarrierPreflight.refusal(new SparkConf().set("spark.ssl.enabled", "true"),
                "local[2]", 2, 2, true));
        assertEquals(Optional.empty(), BarrierPreflight.refusal(new SparkConf(), "local[2]", 2, 2, false));
    }

    static Stream<Arguments> badConfigs() {
        return Stream.of(
                Arguments.of(0, "/ckpt", Duration.ofSeconds(1), "worldSize must be >= 1, got 0"),
                Arguments.of(-2, "/ckpt", Duration.ofSeconds(1), "worldSize must be >= 1, got -2"),
                Arguments.of(2, " ", Duration.ofSeconds(1), "checkpointDir must not be blank, got ' '"),
                Arguments.of(2, "/ckpt", Duration.ZERO, "timeout must be positive, got PT0S"),
                Arguments.of(2, "/ckpt", Duration.ofSeconds(-1), "timeout must be positive, got PT-1S"),
                Arguments.of(2, "/ckpt", Duration.ofDays(30), "timeout must be at most 2147483647 ms, got PT720H"));
    }

    @ParameterizedTest(name = "{3}")
    @MethodSource("badConfigs")
    void badConfig_isRejected_namingTheField(int world, String dir, Duration timeout, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SparkTrainingConfig(world, dir, timeout, false));
        assertEquals(message, e.getMessage());
    }

    @Test
    void nullFields_areRejected_namingTheField() {
        assertTrue(assertThrows(NullPointerException.class, () -> SparkTrainingConfig.of(2, null)).getMessage()
                .startsWith("checkpointDir"));
        assertTrue(assertThrows(NullPointerException.class, () -> SparkTrainingConfig.of(2, "/c").withTimeout(null))
                .getMessage().startsWith("timeout"));
    }

    @Test
    void taskAddress_givesTheHost() {
        assertEquals("10.0.0.7", RankRunner.hostOf("10.0.0.7:41234"));
        assertEquals("worker-1.example", RankRunner.hostOf("worker-1.example:7078"));
        assertEquals("fe80::1", RankRunner.hostOf("[fe80::1]:7078"));
    }
}
