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
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ScaleScoresTest {
    private static final String STEP = "dev.muon.bench.MuonStepBenchmark.step";

    private static String record(String benchmark, String model, String optimizer, String dtype, double score) {
        return """
                {"benchmark": "%s", "params": {"model": "%s", "optimizer": "%s", "nsPrecision": "%s",
                 "nsAlgorithm": "AUTO", "batching": "on"},
                 "primaryMetric": {"score": %s, "scoreError": 2.0, "scoreUnit": "ms/op"}}
                """.formatted(benchmark, model, optimizer, dtype, score);
    }

    private static String peer(String entries) {
        return "{\"torch\": \"1.13\", \"isa\": \"native\", \"block\": {" + entries + "}}";
    }

    private static String peerEntry(String key, double median, double before, double after, double peak) {
        return """
                "%s": {"median_ms": %s, "min_ms": 1, "max_ms": 2, "before_mib": %s, "after_mib": %s, "peak_mib": %s}
                """.formatted(key, median, before, after, peak);
    }

    @Test
    void read_joinsBothSides_takesThePeersFastestRun_andTheMemoryOverBefore(@TempDir Path dir) throws IOException {
        Path ours = Files.writeString(dir.resolve("ours.json"), "[" + record(STEP, "block-768", "muon", "float32", 100)
                + "," + record(STEP, "block-1024", "muon", "float32", 200) + ","
                + record(STEP, "block-768", "muon", "bfloat16", 60) + ","
                + record(STEP, "gpt2-small-width", "muon", "float32", 1) + ","
                + record(STEP, "block-768", "adamw", "float32", 1) + ","
                + record("other.Benchmark.x", "block-768", "muon", "float32", 1) + "]");
        Path memory = Files.writeString(dir.resolve("ours-memory.jsonl"), """
                {"model":"block-768","optimizer":"muon","nsPrecision":"float32","before":500,"after":560,"peak":600}

                {"model":"block-1024","optimizer":"muon","nsPrecision":"float32","before":500,"after":600,"peak":650}
                """);
        Path slow = Files.writeString(dir.resolve("peer-default-768.json"), peer(peerEntry("768/float32", 300, 200,
                260, 280) + "," + peerEntry("768/bfloat16", 90, 200, 230, 240)));
        Path fast = Files.writeString(dir.resolve("peer-passive-768.json"), peer(peerEntry("768/float32", 250, 210,
                250, 300)));
        Path wide = Files.writeString(dir.resolve("peer-passive-1024.json"), peer(peerEntry("1024/float32", 500,
                200, 300, 350)));

        List<ScaleScores.Point> points = ScaleScores.read(ours, memory, List.of(slow, fast, wide));

        assertEquals(3, points.size(), "other benchmarks, models and optimizers are skipped: " + points);
        ScaleScores.Point first = points.get(0);
        assertEquals(768, first.width());
        assertEquals("float32", first.dtype());
        assertEquals(250, first.peerMs(), "the fastest of the peer's runs");
        assertEquals("peer-passive-768.json", first.peerRun());
        assertEquals(2.5, first.ratio(), 1e-12);
        assertEquals(new ScaleScores.Memory(60, 100), first.oursMib());
        assertEquals(new ScaleScores.Memory(40, 90), first.peerMib(), "the memory of the fastest run");
        assertEquals(1024, points.get(1).width(), "float32 by width, then bfloat16");
        ScaleScores.Point bf16 = points.get(2);
        assertEquals("bfloat16", bf16.dtype());
        assertTrue(Double.isNaN(bf16.oursMib().held()), "no memory line: none shown");

        String table = ScaleCurvePlot.table(points);
        assertTrue(table.contains("| 768 | float32 | 100.0 ± 2.0 | 250.0 | **2.50×** | 60 / 100 | 40 / 90 | "
                + "peer-passive-768.json |"), table);
        assertTrue(table.contains("| 768 | bfloat16 | 60.0 ± 2.0 | 90.0 | **1.50×** | — | 30 / 40 |"), table);
    }

    static Stream<Arguments> badInputs() {
        return Stream.of(
                Arguments.of("[]", peer(peerEntry("768/float32", 1, 1, 1, 1)),
                        "no width and dtype measured on both sides: ours [], the peer's [768/float32]"),
                Arguments.of("{}", peer(""), " is not a JMH JSON result (expected an array of records)"),
                Arguments.of("[" + record(STEP, "block-768", "muon", "float32", 1) + "]", "{\"ns\": {}}",
                        " holds no \"block\" timings (pytorch_peer.py --block D)"));
    }

    @ParameterizedTest(name = "{2}")
    @MethodSource("badInputs")
    void read_refusesWhatItCannotJoin(String ours, String peer, String message, @TempDir Path dir)
            throws IOException {
        Path oursFile = Files.writeString(dir.resolve("ours.json"), ours);
        Path peerFile = Files.writeString(dir.resolve("peer.json"), peer);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ScaleScores.read(oursFile, null, List.of(peerFile)));
        assertTrue(e.getMessage().endsWith(message), e.getMessage());
    }

    static Stream<Arguments> badBlockModels() {
        return Stream.of(Arguments.of("block-"), Arguments.of("block-0"), Arguments.of("block-x"),
                Arguments.of("block-1234567"), Arguments.of("block--5"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badBlockModels")
    void blockWidth_refusesAModelWithoutAWidth(String model) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MuonStepBenchmark.blockWidth(model));
        assertEquals("model block-D needs a width D from 1 to 999999, got " + model, e.getMessage());
    }

    @Test
    void blockWidth_readsTheWidth() {
        assertEquals(1600, MuonStepBenchmark.blockWidth("block-1600"));
    }
}
