package dev.muon.examples;

import dev.muon.MuonAdamW;
import dev.muon.OptimizerKind;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** TinyGpt on the embedded text, at a size that runs in seconds; needs no corpus installed. */
class TinyGptTest {

    @Test
    void assignment_putsEmbeddingsAndHeadOnAdamW_andBlockMatricesOnMuon() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(0);
            CharTransformer model = new CharTransformer(20, 8, 16, 1, 2);
            MuonAdamW optimizer = MuonAdamW.dropIn(model.named_parameters(),
                    new org.bytedeco.pytorch.AdamWOptions(1e-3));
            List<String> adamw = optimizer.assignment().names(OptimizerKind.ADAMW);
            List<String> muon = optimizer.assignment().names(OptimizerKind.MUON);
            assertTrue(adamw.containsAll(List.of("tok_emb.weight", "pos_emb.weight", "lm_head.weight")), adamw::toString);
            assertEquals(List.of("block0.q.weight", "block0.k.weight", "block0.v.weight", "block0.o.weight",
                    "block0.fc.weight", "block0.proj.weight"), muon);
        }
    }

    @Test
    void compare_onEmbeddedText_bothOptimizersLowerTheValidationLoss(@TempDir Path dir) {
        TinyGpt.Settings s = TinyGpt.Settings.parse("--steps", "8", "--width", "32", "--layers", "1", "--heads", "2",
                "--context", "16", "--batch", "8", "--eval-every", "4", "--val-batches", "1");
        List<TinyGpt.Run> runs = TinyGpt.compare(CharCorpus.embedded(), s);

        assertEquals(2, runs.size());
        // Same seed, same initial weights: both start from the same validation loss.
        assertEquals(runs.get(0).points().get(0).valLoss(), runs.get(1).points().get(0).valLoss(), 1e-6);
        for (TinyGpt.Run run : runs) {
            assertEquals(List.of(0, 4, 8), run.points().stream().map(TinyGpt.Point::step).toList());
            assertTrue(run.last().valLoss() < run.points().get(0).valLoss(), run.name() + ": " + run.points());
        }
        List<Path> written = TinyGptCurves.write(runs, dir.resolve("curves.csv"), dir.resolve("curves.png"), "test",
                "");
        assertEquals(List.of(dir.resolve("curves.csv"), dir.resolve("curves.png")), written);
        assertTrue(Files.isRegularFile(dir.resolve("curves.png")));
        // The CSV reads back as the same curves (to its 5 decimals): what a figure is redrawn from.
        List<TinyGpt.Run> back = TinyGptCurves.read(dir.resolve("curves.csv"));
        assertEquals(runs.stream().map(TinyGpt.Run::name).toList(), back.stream().map(TinyGpt.Run::name).toList());
        for (int r = 0; r < runs.size(); r++) {
            assertEquals(runs.get(r).points().size(), back.get(r).points().size());
            for (int i = 0; i < runs.get(r).points().size(); i++) {
                assertEquals(runs.get(r).points().get(i).step(), back.get(r).points().get(i).step());
                assertEquals(runs.get(r).points().get(i).valLoss(), back.get(r).points().get(i).valLoss(), 1e-5);
            }
        }
    }

    /** With few evaluations, quarters that fall on the same one give one row, and step 0 none (issue 30, item 8). */
    @Test
    void quarterSteps_areDistinct_andSkipStepZero() {
        TinyGpt.Run everyTwentyFive = new TinyGpt.Run("AdamW", List.of(new TinyGpt.Point(0, 0, Double.NaN, 4.9),
                new TinyGpt.Point(25, 1, 3.0, 2.9)));
        assertEquals(List.of(25), TinyGpt.quarterSteps(everyTwentyFive, 25));
        java.util.List<TinyGpt.Point> points = new java.util.ArrayList<>();
        for (int step = 0; step <= 500; step += 25) {
            points.add(new TinyGpt.Point(step, step, 2, 2));
        }
        assertEquals(List.of(125, 250, 375, 500), TinyGpt.quarterSteps(new TinyGpt.Run("AdamW", points), 500));
    }

    @Test
    void compare_normuon_runsMuonAgainstNorMuon_fromTheSameStart() {
        TinyGpt.Settings s = TinyGpt.Settings.parse("--steps", "8", "--width", "32", "--layers", "1", "--heads", "2",
                "--context", "16", "--batch", "8", "--eval-every", "4", "--val-batches", "1", "--compare", "normuon");
        assertEquals(TinyGpt.Comparison.NORMUON, s.comparison());
        List<TinyGpt.Run> runs = TinyGpt.compare(CharCorpus.embedded(), s);

        assertEquals(List.of("Muon", "NorMuon"), runs.stream().map(TinyGpt.Run::name).toList());
        assertEquals(runs.get(0).points().get(0).valLoss(), runs.get(1).points().get(0).valLoss(), 1e-6);
        for (TinyGpt.Run run : runs) {
            assertTrue(run.last().valLoss() < run.points().get(0).valLoss(), run.name() + ": " + run.points());
        }
        // NorMuon changes the Muon updates, so the two runs part after the first step.
        assertTrue(runs.get(0).last().valLoss() != runs.get(1).last().valLoss(), runs.toString());
    }

    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> badSettings() {
        return java.util.stream.Stream.of(
                org.junit.jupiter.params.provider.Arguments.of(List.of("--steps", "0"), "--steps must be >= 1, got 0"),
                org.junit.jupiter.params.provider.Arguments.of(List.of("--threads", "0"), "--threads must be >= 1, got 0"),
                org.junit.jupiter.params.provider.Arguments.of(List.of("--heads", "-2"), "--heads must be >= 1, got -2"),
                org.junit.jupiter.params.provider.Arguments.of(List.of("--lr", "fast"), "'fast' is not a double"),
                org.junit.jupiter.params.provider.Arguments.of(List.of("--steps"), "Missing required parameter"),
                org.junit.jupiter.params.provider.Arguments.of(List.of("--compare", "sgd"),
                        "Invalid value for option '--compare'"));
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.MethodSource("badSettings")
    void settings_badValue_isRejected_namingTheOption(List<String> args, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TinyGpt.Settings.parse(args.toArray(String[]::new)));
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }

    @Test
    void settings_unknownOption_isRejected() {
        assertThrows(IllegalArgumentException.class, () -> TinyGpt.Settings.parse("--stepz", "3"));
    }

    @Test
    void embeddedCorpus_saysItIsTheFallback() {
        CharCorpus corpus = CharCorpus.embedded();
        assertTrue(corpus.isEmbedded());
        assertTrue(corpus.source().contains("no corpus found"));
    }

    @Test
    void jmhQuickstart_printsTheBenchmarkCommandForTheShapes() {
        String commands = JmhQuickstart.commands(List.of(JmhQuickstart.parseShape("768x3072"),
                JmhQuickstart.parseShape("64X64")));
        assertTrue(commands.contains("java -jar muon-bench/target/benchmarks.jar NewtonSchulzBenchmark"
                + " -p shape=768x3072,64x64"), commands);
    }

    static Stream<String> badShapes() {
        return Stream.of("768by3072", "0x3", "3x-1", "3x", "x3", "3x3x3", "");
    }

    @ParameterizedTest
    @MethodSource("badShapes")
    void jmhQuickstart_badShape_isRejected(String shape) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> JmhQuickstart.parseShape(shape));
        assertTrue(e.getMessage().contains("ROWSxCOLS"), e.getMessage());
    }
}
