package dev.muon.examples.study;

import dev.muon.examples.ExampleCli;
import dev.muon.examples.ExampleErrorsTest;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * MuonStudy end to end at a size that runs in seconds, on a dictionary made on the fly: one cell, a sweep stopped
 * and resumed (a row cut short by a kill included), the timing pass and the analysis, and the one-line errors.
 */
class MuonStudyTest {
    @TempDir
    Path dir;
    private Path data;

    /** A model and run small enough for a test: width 16, 1 layer, context 16, batch 4, 6 steps. */
    private static final List<String> TINY = List.of("--layers", "1", "--context", "16", "--evals", "2");
    private static final List<String> TINY_PLAN = List.of("--settings", "16x4", "--variants-at", "16x4",
            "--adamw-lrs", "1e-3,3e-3", "--muon-lrs", "1e-3,3e-3", "--seeds", "2", "--tokens", "384",
            "--max-extensions", "0");

    @BeforeEach
    void dictionary() throws IOException {
        data = TinyDictionary.write(dir, "tiny", 300);
    }

    private ExampleErrorsTest.Outcome study(String... args) {
        return ExampleErrorsTest.run(ExampleCli.commandLine(new MuonStudy()), args);
    }

    private String[] args(String command, List<String> extra, String... more) {
        List<String> all = new ArrayList<>(List.of(command, "--data", data.toString()));
        all.addAll(TINY);
        all.addAll(extra);
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    @Test
    void cell_trainsOneRun_andWritesItsRow() {
        Path results = dir.resolve("one");
        String[] muonCell = args("cell", List.of(), "--optimizer", "muon", "--lr", "3e-3", "--muon-lr", "3e-3",
                "--width", "16", "--batch", "4", "--steps", "6", "--results", results.toString());
        ExampleErrorsTest.Outcome o = study(muonCell);
        assertEquals(0, o.exitCode(), o.err());
        StudyCsv.Contents rows = StudyCsv.read(results.resolve(StudyCsv.FILE));
        assertEquals(1, rows.results().size());
        StudyResult r = rows.results().get(0);
        assertEquals(StudyArm.MUON, r.cell().arm());
        assertEquals(List.of(0, 3, 6), java.util.Arrays.stream(r.evalSteps()).boxed().toList());
        assertTrue(r.finalValLoss() < r.valLoss()[0], java.util.Arrays.toString(r.valLoss()));
        assertFalse(r.diverged());
        assertEquals(1, r.threads());
        assertTrue(r.trainSeconds()[2] > 0 && r.wallSeconds() >= r.trainSeconds()[2], r.toString());
        assertFalse(r.machine().commit().isEmpty() || r.machine().cpu().isEmpty());
        assertEquals("tiny.dict.dz", r.corpus());
        // The same cell again is found in the file and not run.
        ExampleErrorsTest.Outcome again = study(muonCell);
        assertEquals(0, again.exitCode(), again.err());
        assertEquals(1, StudyCsv.read(results.resolve(StudyCsv.FILE)).results().size());
    }

    @Test
    void sweep_stoppedAndKilled_resumesWithoutRedoingFinishedCells_thenTimingAndAnalysis() throws IOException {
        Path results = dir.resolve("study");
        Path csv = results.resolve(StudyCsv.FILE);
        ExampleErrorsTest.Outcome first = study(args("sweep", TINY_PLAN, "--results", results.toString(),
                "--max-runs", "3"));
        assertEquals(0, first.exitCode(), first.err());
        List<String> before = Files.readAllLines(csv);
        assertEquals(4, before.size(), String.join("\n", before));
        // A kill while the fourth row was being written leaves part of it, without a line break.
        String cut = CutRow.append(csv, before.get(1), 40);

        ExampleErrorsTest.Outcome rest = study(args("sweep", TINY_PLAN, "--results", results.toString(),
                "--workers", "2"));
        assertEquals(0, rest.exitCode(), rest.err());
        // The three finished rows are untouched, the cut row is left where it was, and every cell is there once:
        // AdamW 2 lrs, Muon 2 lrs, 5 variant configurations, 2 seeds each.
        List<String> after = CutRow.assertKeptBefore(csv, before, cut);
        StudyCsv.Contents contents = StudyCsv.read(csv);
        assertEquals(List.of(5), contents.skippedLines());
        assertEquals(18, contents.results().size());
        assertEquals(18, contents.byKey().size());
        // TINY_PLAN as a plan: its one setting, which is also where the variants run.
        StudySetting tiny = StudyPlan.setting("16x4", "--settings", 1, 4, 16, 384, 2, 0.1);
        StudyPlan plan = new StudyPlan(List.of(tiny), List.of(tiny), List.of(1e-3, 3e-3), List.of(1e-3, 3e-3),
                List.of(1L, 2L), 0);
        assertEquals(List.of(), plan.pending(contents.byKey()));
        // A third run finds nothing to do.
        ExampleErrorsTest.Outcome third = study(args("sweep", TINY_PLAN, "--results", results.toString()));
        assertEquals(0, third.exitCode(), third.err());
        assertEquals(after, Files.readAllLines(csv));

        // Two workers at once gave the same numbers as one cell alone: the seed alone decides a run.
        StudyResult fromSweep = contents.results().get(contents.results().size() - 1);
        StudyCell c = fromSweep.cell();
        Path alone = dir.resolve("alone");
        List<String> cellArgs = new ArrayList<>(List.of("--optimizer", c.arm().id(), "--lr",
                Double.toString(c.adamwLr()), "--seed", Long.toString(c.seed()), "--width", "16", "--batch", "4",
                "--steps", "6", "--results", alone.toString()));
        if (c.arm().muon()) {
            cellArgs.addAll(List.of("--muon-lr", Double.toString(c.muonLr())));
        }
        assertEquals(0, study(args("cell", cellArgs)).exitCode());
        StudyResult single = StudyCsv.read(alone.resolve(StudyCsv.FILE)).results().get(0);
        assertEquals(c.key(), single.cell().key());
        assertEquals(java.util.Arrays.toString(fromSweep.valLoss()), java.util.Arrays.toString(single.valLoss()));

        ExampleErrorsTest.Outcome timing = study(args("timing", TINY_PLAN, "--results", results.toString(),
                "--rounds", "2", "--steps-per-round", "2", "--warm-up", "1"));
        assertEquals(0, timing.exitCode(), timing.err());
        Map<String, Map<StudyArm, StudyTiming.StepTime>> times = StudyTiming.read(results.resolve(StudyTiming.FILE));
        Map<StudyArm, StudyTiming.StepTime> setting = times.get(StudyTiming.key(16, 4, 1, 4, 16));
        assertEquals(StudyArm.values().length, setting.size());
        assertTrue(setting.values().stream().allMatch(t -> t.msPerRound().length == 2 && t.interval().mean() > 0));

        ExampleErrorsTest.Outcome analysis = study("analyze", "--results", results.toString());
        assertEquals(0, analysis.exitCode(), analysis.err());
        String report = Files.readString(results.resolve(StudyAnalysis.REPORT));
        assertTrue(report.contains("## d = 16, 1 layers, batch 4, context 16, 6 steps"), report);
        assertTrue(report.contains("| AdamW |") && report.contains("| baseline |"), report);
        assertTrue(Stream.of("faster", "slower", "no difference shown").anyMatch(report::contains), report);
        for (String figure : List.of("lr", "curves", "variants")) {
            Path png = results.resolve("study-d16-b4-" + figure + ".png");
            assertTrue(Files.size(png) > 10_000, png + " is missing or empty");
        }
        assertEquals(8, Files.readAllLines(results.resolve(StudyAnalysis.SUMMARY)).size());
    }

    static Stream<Arguments> usageErrors() {
        return Stream.of(
                Arguments.of(List.of("cell", "--optimizer", "muon", "--lr", "1e-3"),
                        "MuonStudy cell: --muon-lr is required for muon, which has a Muon side"),
                Arguments.of(List.of("cell", "--optimizer", "adamw", "--lr", "1e-3", "--muon-lr", "1e-3"),
                        "MuonStudy cell: --muon-lr must not be given for adamw, which has no Muon side, got 0.001"),
                Arguments.of(List.of("cell", "--optimizer", "sgd", "--lr", "1e-3"),
                        "MuonStudy cell: Invalid value for option '--optimizer'"),
                Arguments.of(List.of("cell", "--optimizer", "adamw", "--lr", "0"),
                        "MuonStudy cell: --lr must be a finite number > 0, got 0.0"),
                Arguments.of(List.of("cell", "--optimizer", "adamw", "--lr", "1e-3", "--width", "18"),
                        "MuonStudy cell: --heads must divide --width, got width 18, heads 4"),
                Arguments.of(List.of("sweep", "--results", "x", "--settings", "128"),
                        "MuonStudy sweep: --settings takes WIDTHxBATCH settings such as 128x32, got '128'"),
                Arguments.of(List.of("sweep", "--results", "x", "--workers", "0"),
                        "MuonStudy sweep: --workers must be >= 1, got 0"),
                Arguments.of(List.of("sweep", "--results", "x", "--variants-at", "64x32"),
                        "MuonStudy sweep: --variants-at must be among --settings, got d64-b32"),
                Arguments.of(List.of("sweep"), "MuonStudy sweep: Missing required option: '--results=DIR'"));
    }

    @ParameterizedTest
    @MethodSource("usageErrors")
    void usageError_isOneLine_exitTwo_namingTheOption(List<String> args, String expected) {
        ExampleErrorsTest.Outcome o = study(args.toArray(String[]::new));
        assertEquals(ExampleCli.USAGE, o.exitCode(), o.err());
        assertEquals(1, o.errLines().size(), o.err());
        assertTrue(o.errLines().get(0).startsWith(expected), o.errLines().get(0));
    }

    @Test
    void missingData_isOneLine_exitOne_andNothingTrains() {
        Path missing = dir.resolve("nope.dict.dz");
        ExampleErrorsTest.Outcome o = study("cell", "--data", missing.toString(), "--optimizer", "adamw", "--lr",
                "1e-3", "--results", dir.resolve("r").toString());
        assertEquals(ExampleCli.DATA, o.exitCode(), o.err());
        assertEquals(List.of("MuonStudy cell: --data " + missing + ": no such file; it must be a dictd .dict.dz or .dict "
                + "file with its .index beside it (Debian's dict-gcide: apt-get install dict-gcide)"), o.errLines());
        assertFalse(Files.exists(dir.resolve("r").resolve(StudyCsv.FILE)));
    }

    @Test
    void analyze_withoutResults_isOneLine_exitOne() {
        ExampleErrorsTest.Outcome o = study("analyze", "--results", dir.toString());
        assertEquals(ExampleCli.DATA, o.exitCode(), o.err());
        assertEquals(List.of("MuonStudy analyze: --results " + dir + ": holds no runs.csv; run the sweep first"),
                o.errLines());
    }

    /** A run's threads bound OpenBLAS's pool too, which the sweep's workers share (left alone: one per core). */
    @Test
    void useThreads_boundsLibtorchsPool_andOpenBlasPool() {
        int torchBefore = org.bytedeco.pytorch.global.torch.get_num_threads();
        int blasBefore = org.bytedeco.openblas.global.openblas_nolapack.blas_get_num_threads();
        try {
            MuonStudy.useThreads(1);
            assertEquals(1, org.bytedeco.pytorch.global.torch.get_num_threads());
            assertEquals(1, org.bytedeco.openblas.global.openblas_nolapack.blas_get_num_threads());
            MuonStudy.useThreads(2);
            assertEquals(2, org.bytedeco.openblas.global.openblas_nolapack.blas_get_num_threads());
        } finally {
            org.bytedeco.pytorch.global.torch.set_num_threads(torchBefore);
            org.bytedeco.openblas.global.openblas_nolapack.blas_set_num_threads(blasBefore);
        }
    }

}
