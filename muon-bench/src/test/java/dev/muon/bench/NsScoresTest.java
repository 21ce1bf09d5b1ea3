package dev.muon.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NsScoresTest {
    private static final String NS = "dev.muon.bench.NewtonSchulzBenchmark.orthogonalize";

    private static String record(String benchmark, String variant, double score, String error) {
        return """
                {"benchmark": "%s", "params": {"dtype": "float32", "shape": "64x256", "variant": "%s"},
                 "primaryMetric": {"score": %s, "scoreError": %s, "scoreUnit": "ms/op"}}
                """.formatted(benchmark, variant, score, error);
    }

    private static Path write(Path dir, String json) throws IOException {
        Path file = dir.resolve("result.json");
        Files.writeString(file, json);
        return file;
    }

    @Test
    void readJmh_keepsTheErrorMargins_andRatiosCombineThem(@TempDir Path dir) throws IOException {
        Path file = write(dir, "[" + record(NS, "gemm", 100, "10") + "," + record(NS, "ns-auto", 50, "5") + ","
                + record(NS, "naive", 120, "\"NaN\"") + "," + record("other.Benchmark.x", "gemm", 1, "1") + "]");
        List<NsScores.Score> scores = NsScores.readJmh(file);

        assertEquals(3, scores.size(), "records of other benchmarks are skipped");
        assertEquals(new NsScores.Score("float32", "ns-auto", "64x256", 50, 5), scores.get(1));
        assertEquals(0, scores.get(2).error(), "JMH's NaN margin (one iteration) becomes no bar");
        Map<String, Map<String, NsScores.Ratio>> bars = BenchmarkPlot.bars(scores, "float32");
        NsScores.Ratio auto = bars.get("ns-auto").get("64x256");
        assertEquals(0.5, auto.ratio(), 1e-12);
        // 10% relative error on each side, in quadrature.
        assertEquals(0.5 * Math.sqrt(0.02), auto.error(), 1e-12);
        NsScores.Ratio floor = bars.get("gemm").get("64x256");
        assertEquals(1.0, floor.ratio(), 1e-12);
        assertEquals(0.1, floor.error(), 1e-12, "the floor keeps its own margin, not counted twice");
    }

    @Test
    void readPeer_takesMedian_andHalfTheRange(@TempDir Path dir) throws IOException {
        Path file = write(dir, """
                {"float32": {"median_ms": 700, "min_ms": 680, "max_ms": 740}, "note": "x"}
                """);
        assertEquals(Map.of("float32", new NsScores.Peer(700, 30)), NsScores.readPeer(file, "64x256"));
    }

    @Test
    void readPeer_readsPytorchPeersOutput_atTheGivenShape(@TempDir Path dir) throws IOException {
        Path file = write(dir, """
                {"torch": "1.13", "ns": {
                  "1024x4096/float32": {"median_ms": 500, "min_ms": 490, "max_ms": 530},
                  "1024x4096/bfloat16": {"median_ms": 250, "min_ms": 240, "max_ms": 250},
                  "768x768/float32": {"median_ms": 80, "min_ms": 79, "max_ms": 81}},
                 "step": {"float32": {"median_ms": 3000, "min_ms": 2900, "max_ms": 3100}}}
                """);
        assertEquals(Map.of("float32", new NsScores.Peer(500, 20), "bfloat16", new NsScores.Peer(250, 5)),
                NsScores.readPeer(file, "1024x4096"));
    }

    static Stream<Arguments> badFiles() {
        return Stream.of(
                Arguments.of("jmh", "{\"benchmark\": \"x\"}", "not a JMH JSON result"),
                Arguments.of("jmh", "[" + record("other.Benchmark.x", "gemm", 1, "1") + "]",
                        "no NewtonSchulzBenchmark results"),
                Arguments.of("peer", "{\"float32\": {\"median_ms\": 1}}", "holds no {dtype"),
                Arguments.of("peer", "{\"ns\": {\"768x768/float32\": {\"median_ms\": 1, \"min_ms\": 1, "
                        + "\"max_ms\": 1}}}", "timings at 64x256"),
                Arguments.of("floor", "[" + record(NS, "ns-auto", 1, "1") + "]", "no 'gemm' floor for float32 64x256"));
    }

    @ParameterizedTest
    @MethodSource("badFiles")
    void badInput_isRejected_namingWhatIsMissing(String reader, String json, String message, @TempDir Path dir)
            throws IOException {
        Path file = write(dir, json);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> {
            switch (reader) {
                case "jmh" -> NsScores.readJmh(file);
                case "peer" -> NsScores.readPeer(file, "64x256");
                default -> NsScores.floor(NsScores.readJmh(file), "float32", "64x256");
            }
        });
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }
}
