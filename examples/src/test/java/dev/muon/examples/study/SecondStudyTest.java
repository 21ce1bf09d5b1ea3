package dev.muon.examples.study;

import dev.muon.AdamWConfig;
import dev.muon.ConvWeights;
import dev.muon.EmaNesterov;
import dev.muon.MuonAdamW;
import dev.muon.OptimizerKind;
import dev.muon.examples.CharTransformer;
import dev.muon.examples.ExampleCli;
import dev.muon.examples.ExampleErrorsTest;
import dev.muon.schedule.LibtorchOptimizer;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.TensorVector;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The second study's runner at a size that trains in seconds (width 16, one block, 6 steps, 8 validation windows,
 * through {@link SecondScale}, the protocol's constants untouched), on dictionaries made on the fly: every arm's
 * optimizer, AdamW-2lr's hidden group, the schedule, EMA-Nesterov's lookahead, seeds, the results file, the sweep
 * stopped and resumed, {@code --plan} and the errors.
 */
class SecondStudyTest {
    /** Width 16, 1 block, 4 heads, context 16, batch 4, 8 validation windows, 2 evaluations, 6 steps. */
    static final SecondScale TINY = new SecondScale(16, 1, 4, 16, 4, 8, 2, 6);
    /** The same model over the cell's own budget, so that the cell's schedule runs whole. */
    static final SecondScale TINY_FULL_BUDGET = new SecondScale(16, 1, 4, 16, 4, 8, 2, 0);

    @TempDir
    Path dir;
    private Path gcide;
    private Path foldoc;
    private SecondData gcideData;

    @BeforeEach
    void dictionaries() throws IOException {
        gcide = TinyDictionary.write(dir, "gcide", 300);
        foldoc = TinyFoldoc.write(dir, "foldoc", 300);
        gcideData = SecondData.of("gcide", GcideCorpus.load(gcide, null, "--gcide"), gcide, "--gcide", TINY);
    }

    /** A cell of the arm with the settings it needs: AdamW lr 3e-3, β2 0.99, weight decay 0.1, second lr 4e-3. */
    static SecondCell cell(SecondArm arm, int steps, long seed) {
        return new SecondCell(arm, "gcide", steps, 3e-3, 0.99, 0.1, arm == SecondArm.ADAMW ? Double.NaN : 4e-3,
                arm == SecondArm.HYPERBALL ? 0 : Double.NaN, seed);
    }

    private static CharTransformer model(SecondScale s, int vocabulary) {
        return new CharTransformer(vocabulary, s.context(), s.width(), s.layers(), s.heads());
    }

    @ParameterizedTest
    @EnumSource(SecondArm.class)
    void everyArm_buildsTheProtocolsOptimizer_andTrainsAFewSteps_withFiniteLosses(SecondArm arm) {
        SecondCell c = cell(arm, 1000, 1);
        try (PointerScope scope = new PointerScope();
             SecondRun.Trainee t = SecondRun.start(gcideData.corpus(), c, TINY)) {
            TrainingOptimizer o = t.optimizer().optimizer();
            switch (arm) {
                case ADAMW -> assertEquals(1, assertInstanceOf(LibtorchOptimizer.class, o).groupCount());
                case ADAMW_2LR -> assertEquals(2, assertInstanceOf(LibtorchOptimizer.class, o).groupCount());
                default -> {
                    MuonAdamW m = arm == SecondArm.EMA_NESTEROV
                            ? null : assertInstanceOf(MuonAdamW.class, o);
                    if (m != null) {
                        // MuonAdamW keeps FLATTEN for conv filters once its assignment is checked; no filter here.
                        assertEquals(arm.muonConfig(4e-3, 0.1, c.radius()).withConvWeights(ConvWeights.FLATTEN),
                                m.muonConfig());
                        assertEquals(new AdamWConfig(3e-3, 0.9, 0.99, 1e-8, 0.1), m.adamWConfig());
                    } else {
                        assertInstanceOf(EmaNesterov.class, o);
                    }
                }
            }
            assertEquals(arm == SecondArm.EMA_NESTEROV, t.optimizer().lookahead().isPresent());
        }
        SecondResult r = SecondRun.train(gcideData, c, TINY, 1, p -> { });
        assertEquals(List.of(0, 3, 6), Arrays.stream(r.evalSteps()).boxed().toList());
        assertFalse(r.diverged());
        assertTrue(Arrays.stream(r.valLoss()).allMatch(Double::isFinite), Arrays.toString(r.valLoss()));
        assertNotEquals(r.valLoss()[0], r.finalValLoss(), "the weights did not move");
        assertTrue(r.trainSeconds()[2] > r.trainSeconds()[1] && r.trainSeconds()[1] > 0,
                Arrays.toString(r.trainSeconds()));
        assertEquals("gcide.dict.dz", r.corpusFile());
    }

    /** The Muon arm with hidden matrices of its own: the muon arm's MuonAdamW gives these to Muon, and no others. */
    static Stream<Arguments> models() {
        return Stream.of(Arguments.of("the protocol's model", SecondScale.PROTOCOL, 12),
                Arguments.of("the tests' model", TINY, 6));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void adamw2lr_hiddenGroupIsExactlyWhatMuonAdamWGivesMuon_atTheSecondLr(String what, SecondScale s,
                                                                          int matrices) {
        try (PointerScope scope = new PointerScope()) {
            CharTransformer model = model(s, 96);
            SecondCell muonCell = cell(SecondArm.MUON, 1000, 1);
            Set<Long> muonSet = new HashSet<>();
            try (SecondOptimizer muon = SecondOptimizer.build(model, muonCell, muonCell.schedule())) {
                List<String> names = ((MuonAdamW) muon.optimizer()).assignment().names(OptimizerKind.MUON);
                assertEquals(matrices, names.size(), names::toString);
                StringTensorDict named = model.named_parameters();
                for (long i = 0; i < named.size(); i++) {
                    if (names.contains(named.get(i).key().getString())) {
                        muonSet.add(named.get(i).value().data_ptr().address());
                    }
                }
            }
            Set<Long> all = new HashSet<>();
            TensorVector params = model.parameters();
            for (long i = 0; i < params.size(); i++) {
                all.add(params.get(i).data_ptr().address());
            }
            AdamW twoLr = SecondOptimizer.twoGroups(model, cell(SecondArm.ADAMW_2LR, 1000, 1));
            assertEquals(2, twoLr.param_groups().size());
            Set<Long> hidden = addresses(twoLr.param_groups().get(0).params());
            Set<Long> rest = addresses(twoLr.param_groups().get(1).params());
            assertEquals(muonSet, hidden);
            Set<Long> both = new HashSet<>(hidden);
            both.addAll(rest);
            assertEquals(all, both);
            assertEquals(all.size(), hidden.size() + rest.size(), "a parameter in both groups");
            // The hidden lr in group 0, AdamW's in group 1; β1 0.9, the cell's β2 and weight decay, eps 1e-8 in both.
            assertEquals(new AdamWConfig(4e-3, 0.9, 0.99, 1e-8, 0.1),
                    AdamWConfig.of(new AdamWOptions(twoLr.param_groups().get(0).options())));
            assertEquals(new AdamWConfig(3e-3, 0.9, 0.99, 1e-8, 0.1),
                    AdamWConfig.of(new AdamWOptions(twoLr.param_groups().get(1).options())));
        }
    }

    private static Set<Long> addresses(TensorVector tensors) {
        Set<Long> out = new HashSet<>();
        for (long i = 0; i < tensors.size(); i++) {
            out.add(tensors.get(i).data_ptr().address());
        }
        return out;
    }

    @Test
    void adamWOptions_areTheLibrarysReadingOfBeta1Beta2EpsAndDecay() {
        // muon-core reads libtorch's betas tuple in its own way; the runner's options must read back the same.
        assertEquals(new AdamWConfig(2e-3, 0.9, 0.95, 1e-8, 0.0),
                AdamWConfig.of(SecondOptimizer.adamWOptions(2e-3, 0.95, 0.0)));
    }

    /** Each arm's groups and their base lrs: AdamW one, the others the second lr then the AdamW lr. */
    static Stream<Arguments> scheduled() {
        return Stream.of(Arguments.of(SecondArm.ADAMW, new double[] {3e-3}),
                Arguments.of(SecondArm.ADAMW_2LR, new double[] {4e-3, 3e-3}),
                Arguments.of(SecondArm.MUON, new double[] {4e-3, 3e-3}),
                Arguments.of(SecondArm.EMA_NESTEROV, new double[] {4e-3, 3e-3}));
    }

    @ParameterizedTest
    @MethodSource("scheduled")
    void schedule_setsEveryGroupsLr_atTheFirstAndTheLastStep_asLrScheduleSays(SecondArm arm, double[] base) {
        SecondCell c = cell(arm, 40, 1);
        // The protocol's schedule for a 40-step budget: warm-up over 5 % of it (2 steps), cosine to a tenth.
        LrSchedule expected = LrSchedule.warmupCosine(2, 40, 0.1);
        assertEquals(expected, c.schedule());
        try (PointerScope scope = new PointerScope();
             SecondRun.Trainee t = SecondRun.start(gcideData.corpus(), c, TINY_FULL_BUDGET)) {
            TrainingOptimizer o = t.optimizer().optimizer();
            for (int step = 1; step <= 40; step++) {
                t.step(gcideData.corpus(), step);
                if (step == 1 || step == 40) {
                    for (int g = 0; g < base.length; g++) {
                        // What the step used: libtorch's group options, or MuonAdamW's configs.
                        assertEquals(base[g] * expected.factor(step - 1), o.lr(g), "group " + g + ", step " + step);
                    }
                }
            }
            assertEquals(base.length, o.groupCount());
            assertEquals(0.5, expected.factor(0));
            assertTrue(expected.factor(39) > 0.1 && expected.factor(39) < 0.102, "a tenth at step 40, not yet at 39");
            if (o instanceof EmaNesterov e) {
                assertEquals(40, e.stepCount());
            }
        }
    }

    @Test
    void emaNesterov_looksAheadAtEveryStep_withTheLrTheScheduleSetForIt() {
        SecondCell c = cell(SecondArm.EMA_NESTEROV, 40, 1);
        LrSchedule schedule = c.schedule();
        try (PointerScope scope = new PointerScope();
             SecondRun.Trainee t = SecondRun.start(gcideData.corpus(), c, TINY_FULL_BUDGET)) {
            EmaNesterov ema = t.optimizer().lookahead().orElseThrow();
            assertEquals(0, ema.stepCount());
            for (int step = 1; step <= 40; step++) {
                t.step(gcideData.corpus(), step);
                assertEquals(step, ema.stepCount());
                // β = 0.6 · lr_t / lr_0: the lookahead read the lr of this step, set before it.
                assertEquals(0.6 * schedule.factor(step - 1), ema.lastLookahead(), 1e-12, "step " + step);
            }
        }
    }

    @Test
    void sameCellTwice_givesTheSameCurveBitForBit_andAnotherSeedAnother() {
        SecondCell c = cell(SecondArm.MUON, 1000, 7);
        SecondResult a = SecondRun.train(gcideData, c, TINY, 1, p -> { });
        SecondResult b = SecondRun.train(gcideData, c, TINY, 1, p -> { });
        assertEquals(Double.doubleToRawLongBits(a.finalValLoss()), Double.doubleToRawLongBits(b.finalValLoss()));
        assertTrue(Arrays.equals(a.valLoss(), b.valLoss()),
                Arrays.toString(a.valLoss()) + " against " + Arrays.toString(b.valLoss()));
        SecondResult other = SecondRun.train(gcideData, c.withSeed(8), TINY, 1, p -> { });
        assertNotEquals(a.finalValLoss(), other.finalValLoss());
    }

    @Test
    void train_refusesTheOtherCorpussData() {
        SecondCell c = new SecondCell(SecondArm.ADAMW, "foldoc", 1000, 1e-3, 0.99, 0.1, Double.NaN, Double.NaN, 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SecondRun.train(gcideData, c, TINY, 1, p -> { }));
        assertEquals("the cell trains on foldoc, got the data of gcide", e.getMessage());
    }

    @Test
    void csvRow_readsBackToTheSameKeyAndCurve_andACutRowIsRefused() {
        SecondResult r = new SecondResult(cell(SecondArm.HYPERBALL, 1000, 1001), new int[] {0, 500, 1000},
                new double[] {4.5, 2.1, Double.NaN}, new double[] {0, 40.5, 80.25}, true, 100, 1, 2, 0.5, 1.5,
                new StudyMachine("abc", "test CPU", 2), "gcide.dict.dz", "2026-11-28T12:00:00Z");
        String row = SecondCsv.row(r);
        SecondResult back = SecondCsv.parse(row);
        assertEquals(r.cell().key(), back.cell().key());
        assertEquals(row, SecondCsv.row(back));
        assertTrue(Double.isNaN(back.finalValLoss()) && back.diverged());
        SecondResult adamw = new SecondResult(cell(SecondArm.ADAMW, 1000, 1), new int[] {0, 1000},
                new double[] {4.5, 2.1}, new double[] {0, 80}, false, 100, 1, 2, 0.5, 1.5,
                new StudyMachine("abc", "test CPU", 2), "gcide.dict.dz", "2026-11-28T12:00:00Z");
        assertEquals(adamw.cell().key(), SecondCsv.parse(SecondCsv.row(adamw)).cell().key());
        for (int cut : new int[] {5, row.length() / 2, row.length() - 3}) {
            String part = row.substring(0, cut);
            assertThrows(IllegalArgumentException.class, () -> SecondCsv.parse(part), part);
        }
    }

    private ExampleErrorsTest.Outcome study(Function<SecondStudy, SecondStudy> setUp, String... args) {
        SecondStudy s = new SecondStudy();
        s.scale = TINY;
        s.gcideDefault = dir.resolve("usr/share/dictd/gcide.dict.dz");
        s.foldocDefault = dir.resolve("usr/share/dictd/foldoc.dict.dz");
        return ExampleErrorsTest.run(ExampleCli.commandLine(setUp.apply(s)), args);
    }

    private String[] args(Path out, String... more) {
        List<String> all = new ArrayList<>(List.of("--out", out.toString(), "--gcide", gcide.toString(), "--foldoc",
                foldoc.toString()));
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    @Test
    void sweep_stoppedAfterMaxRuns_resumesWithoutRunningAFinishedKeyAgain_pastARowCutShort() throws IOException {
        Path out = dir.resolve("second");
        Path csv = out.resolve(SecondCsv.FILE);
        ExampleErrorsTest.Outcome first = study(s -> s, args(out, "--max-runs", "1"));
        assertEquals(0, first.exitCode(), first.err());
        List<String> one = Files.readAllLines(csv);
        assertEquals(2, one.size(), String.join("\n", one));
        assertEquals(String.join(",", SecondCsv.HEADER), one.get(0));
        SecondCell firstCell = SecondCsv.parse(one.get(1)).cell();
        // The plan's first cell: AdamW at GCIDE B1, the smallest lr, β2 and weight decay, seed 1.
        assertEquals(SecondPlan.pending(Map.of()).get(0).key(), firstCell.key());
        assertTrue(first.out().contains("stopped after 1 runs (--max-runs 1)"), first.out());

        ExampleErrorsTest.Outcome second = study(s -> s, args(out, "--max-runs", "1", "--workers", "2"));
        assertEquals(0, second.exitCode(), second.err());
        List<String> two = Files.readAllLines(csv);
        assertEquals(3, two.size(), String.join("\n", two));
        assertEquals(one, two.subList(0, 2));
        assertNotEquals(firstCell.key(), SecondCsv.parse(two.get(2)).cell().key());

        // A kill while the next row was being written leaves part of it, without a line break.
        String cut = CutRow.append(csv, two.get(1), 60);
        ExampleErrorsTest.Outcome third = study(s -> s, args(out, "--max-runs", "1"));
        assertEquals(0, third.exitCode(), third.err());
        assertTrue(third.out().contains("lines [4] are not complete rows"), third.out());
        CutRow.assertKeptBefore(csv, two, cut);
        SecondCsv.Contents contents = SecondCsv.read(csv);
        assertEquals(List.of(4), contents.skippedLines());
        assertEquals(3, contents.results().size());
        assertEquals(3, contents.finals().size(), "a key ran twice");
        SecondResult r = contents.results().get(2);
        assertEquals(SecondStudy.THREADS, r.threads());
        assertEquals(2, r.workers());
        assertEquals("gcide.dict.dz", r.corpusFile());
        assertFalse(r.machine().commit().isEmpty() || r.machine().cpu().isEmpty());
        assertTrue(r.wallSeconds() >= r.trainSeconds()[r.trainSeconds().length - 1], r.toString());
    }

    @Test
    void plan_printsEachStage_theReadyCells_andTheCpuHoursLeft_andRunsNothing() throws IOException {
        Path out = dir.resolve("plan");
        ExampleErrorsTest.Outcome fresh = study(s -> s, "--out", out.toString(), "--plan");
        assertEquals(0, fresh.exitCode(), fresh.err());
        assertFalse(Files.exists(out), "--plan made the results folder");
        String text = fresh.out();
        assertTrue(text.contains("finished runs: 0"), text);
        assertTrue(text.matches("(?s).*gcide-1000 +tuning adamw +90 cells ready.*"), text);
        assertTrue(text.matches("(?s).*foldoc-1000 +waiting for gcide-1000's tuning +0 cells ready.*"), text);
        assertTrue(text.contains("ready to run now: 90 cells, 3.1 CPU-hours"), text);
        assertEquals(90, text.lines().filter(l -> l.startsWith("      adamw gcide 1000 steps")).count(), text);
        assertTrue(text.contains("left: about 569 runs, 32.3 CPU-hours at the first study's cost per step, 16.2 hours "
                + "with 2 worker(s) on as many cores (the protocol's 569 runs less those finished; each lr-edge "
                + "extension adds 3 runs)"), text);

        // With one run finished, that run is no longer ready or left; the packages are not needed for a plan.
        assertEquals(0, study(s -> s, args(out, "--max-runs", "1")).exitCode());
        ExampleErrorsTest.Outcome after = study(s -> s, "--out", out.toString(), "--plan", "--workers", "1");
        assertTrue(after.out().contains("finished runs: 1"), after.out());
        assertTrue(after.out().contains("ready to run now: 89 cells"), after.out());
        assertTrue(after.out().contains("left: about 568 runs, 32.3 CPU-hours"), after.out());
        assertTrue(after.out().contains("hours with 1 worker(s)"), after.out());
    }

    @Test
    void projection_isTheProtocolsRuns_lessTheFinished_neverLessThanTheReady() {
        SecondProjection.Left protocol = SecondProjection.protocol();
        assertEquals(569, protocol.runs());
        // The protocol's 117,295.2 CPU-s less the timing pass's 1,000, which is not a sweep run.
        assertEquals(117_295.2 - SecondPlan.TIMING_CPU_S, protocol.cpuSeconds(), 0.5);
        assertEquals(protocol, SecondProjection.left(List.of(), List.of()));
        SecondCell adamw = SecondPlan.pending(Map.of()).get(0);
        SecondProjection.Left one = SecondProjection.left(List.of(adamw), List.of());
        assertEquals(568, one.runs());
        assertEquals(protocol.cpuSeconds() - 125, one.cpuSeconds(), 1e-6);
        // Past the protocol's count (grids that grew at an edge), what is ready is still left.
        List<SecondCell> many = java.util.Collections.nCopies(1000, adamw);
        SecondProjection.Left extended = SecondProjection.left(many, List.of(adamw.withSeed(2)));
        assertEquals(new SecondProjection.Left(1, 125), extended);
    }

    @Test
    void configuration_namesATunedArmsSettings_withoutItsSeed() {
        assertEquals("adamw: lr 3e-3, beta2 0.99, weight decay 0.1",
                SecondStudy.configuration(cell(SecondArm.ADAMW, 1000, 0)));
        assertEquals("adamw_2lr: hidden lr 4e-3, rest 3e-3, beta2 0.99, weight decay 0.1",
                SecondStudy.configuration(cell(SecondArm.ADAMW_2LR, 1000, 0)));
        assertEquals("hyperball: lr 4e-3, AdamW side 3e-3, beta2 0.99, weight decay 0.1, radius 0.0",
                SecondStudy.configuration(cell(SecondArm.HYPERBALL, 1000, 0)));
    }

    static Stream<Arguments> usageErrors() {
        return Stream.of(
                Arguments.of(List.of(), "SecondStudy: Missing required option: '--out=DIR'"),
                Arguments.of(List.of("--out", "x", "--workers", "0"), "SecondStudy: --workers must be >= 1, got 0"),
                Arguments.of(List.of("--out", "x", "--workers", "two"),
                        "SecondStudy: Invalid value for option '--workers': 'two' is not an int"),
                Arguments.of(List.of("--out", "x", "--max-runs", "-1"),
                        "SecondStudy: --max-runs must be >= 0 (0: no limit), got -1"),
                Arguments.of(List.of("--out", "x", "--steps", "10"), "SecondStudy: Unknown options: '--steps', '10'"),
                Arguments.of(List.of("--out", "x", "--plan", "--timing"), "SecondStudy: --plan, --analyze and "
                        + "--timing each replace the sweep; name at most one, got --plan --timing"),
                Arguments.of(List.of("--out", "x", "--analyze", "--timing"), "SecondStudy: --plan, --analyze and "
                        + "--timing each replace the sweep; name at most one, got --analyze --timing"));
    }

    @Test
    void analyze_writesTheReportOfWhatIsThere_andRunsNothing() throws IOException {
        Path out = dir.resolve("second");
        assertEquals(0, study(s -> s, args(out, "--max-runs", "1")).exitCode());
        List<String> rows = Files.readAllLines(out.resolve(SecondCsv.FILE));
        ExampleErrorsTest.Outcome o = study(s -> s, "--out", out.toString(), "--analyze");
        assertEquals(0, o.exitCode(), o.err());
        assertEquals(rows, Files.readAllLines(out.resolve(SecondCsv.FILE)), "--analyze ran something");
        String report = Files.readString(out.resolve(SecondAnalysis.FILE));
        assertTrue(report.startsWith("# The second study: analysis\n\n1 runs read."), report);
        assertTrue(report.contains("| gcide-1000 | pending | tuning |"), report);
        assertTrue(report.contains("Seconds: pending the timing pass."), report);
        assertTrue(o.out().contains("wrote " + out.resolve(SecondAnalysis.FILE)), o.out());
    }

    @Test
    void timing_beforeEveryArmIsTuned_refusesNamingThem_andWritesNoTimingFile() {
        Path out = dir.resolve("second");
        ExampleErrorsTest.Outcome o = study(s -> s, args(out, "--timing"));
        assertEquals(ExampleCli.DATA, o.exitCode(), o.err());
        assertTrue(o.err().contains("the timing pass times every arm's tuned gcide-1000 configuration; not tuned "
                + "yet: [adamw, adamw_2lr, muon, normuon,"), o.err());
        assertFalse(Files.exists(out.resolve(SecondTiming.FILE)));
    }

    @ParameterizedTest
    @MethodSource("usageErrors")
    void usageError_isOneLine_exitTwo_namingTheOptionAndTheRule(List<String> args, String expected) {
        ExampleErrorsTest.Outcome o = study(s -> s, args.toArray(String[]::new));
        assertEquals(ExampleCli.USAGE, o.exitCode(), o.err());
        assertEquals(1, o.errLines().size(), o.err());
        assertTrue(o.errLines().get(0).startsWith(expected), o.errLines().get(0));
    }

    /** A corpus that is not there, each way; the line each must give, {DIR} for the temp folder. */
    static Stream<Arguments> missingCorpora() {
        return Stream.of(
                Arguments.of("--gcide names no file", List.of("--gcide", "{DIR}/nope.dict.dz"),
                        "SecondStudy: --gcide {DIR}/nope.dict.dz: no such file; it must be a dictd .dict.dz or "
                                + ".dict file with its .index beside it (Debian's dict-gcide: apt-get install "
                                + "dict-gcide)"),
                Arguments.of("dict-gcide not installed", List.of("--foldoc", "{FOLDOC}"),
                        "SecondStudy: no corpus: {DIR}/usr/share/dictd/gcide.dict.dz is not installed; install it "
                                + "with 'apt-get install dict-gcide', or pass --gcide FILE (a dictd .dict.dz or "
                                + ".dict file with its .index beside it)"),
                Arguments.of("dict-foldoc not installed", List.of("--gcide", "{GCIDE}"),
                        "SecondStudy: no corpus: {DIR}/usr/share/dictd/foldoc.dict.dz is not installed; install "
                                + "it with 'apt-get install dict-foldoc', or pass --foldoc FILE (a dictd .dict.dz "
                                + "or .dict file with its .index beside it)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("missingCorpora")
    void missingCorpus_isOneLine_exitOne_namingThePackage_beforeAnyRun(String what, List<String> corpora,
                                                                      String expected) {
        Path out = dir.resolve("r");
        List<String> args = new ArrayList<>(List.of("--out", out.toString()));
        corpora.forEach(a -> args.add(a.replace("{DIR}", dir.toString()).replace("{GCIDE}", gcide.toString())
                .replace("{FOLDOC}", foldoc.toString())));
        ExampleErrorsTest.Outcome o = study(s -> s, args.toArray(String[]::new));
        assertEquals(ExampleCli.DATA, o.exitCode(), o.err());
        assertEquals(List.of(expected.replace("{DIR}", dir.toString())), o.errLines());
        assertFalse(Files.exists(out.resolve(SecondCsv.FILE)));
    }

    @Test
    void scale_badValues_areRejected_andTheProtocolsIsSecondPlans() {
        assertEquals(new SecondScale(128, 2, 4, 64, 32, 256, 25, 0), SecondScale.PROTOCOL);
        SecondCell c = cell(SecondArm.ADAMW, 1000, 1);
        assertTrue(Arrays.equals(c.evalSteps(), SecondScale.PROTOCOL.evalSteps(c)));
        assertEquals(c.schedule(), SecondScale.PROTOCOL.schedule(c));
        assertEquals(1000, SecondScale.PROTOCOL.steps(c));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SecondScale(18, 1, 4, 16, 4, 8, 2, 6));
        assertEquals("heads must divide width, got width 18, heads 4", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new SecondScale(16, 1, 4, 16, 4, 8, 4, 3));
        assertEquals("steps must be 0 (the cell's) or >= evals (4), got 3", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new SecondScale(16, 1, 4, 16, 4, 0, 2, 6));
        assertEquals("validationWindows must be >= 1, got 0", e.getMessage());
    }
}
