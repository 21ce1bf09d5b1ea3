package dev.muon.examples.study;

import dev.muon.examples.AssignmentLog;
import dev.muon.examples.CharCorpus;
import dev.muon.examples.CharTransformer;
import dev.muon.examples.DataError;
import dev.muon.examples.ExampleCli;
import dev.muon.examples.RunFolder;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.openblas.global.openblas_nolapack;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * Does Muon pay on this library? The study of docs/examples.md ("MuonStudy"): TinyGpt's model
 * ({@link CharTransformer}) on Debian's GCIDE dictionary text ({@link GcideCorpus}), libtorch's AdamW against
 * {@code MuonAdamW} and its variants, each tuned over an lr grid at several seeds, compared by the steps and the
 * seconds they need to reach AdamW's best validation loss.
 *
 * <p>Sub-commands, each run from the repository root as
 * {@code mvn -B -q -Ptrain -DskipTests package -Dexample.main=dev.muon.examples.study.MuonStudy -Dexample.args="..."}:
 * <ul>
 *   <li>{@code cell}: one run (optimizer, lrs, seed, width, batch), its curve printed and its row written;</li>
 *   <li>{@code sweep}: the protocol's runs, appended to {@code RESULTS/runs.csv} as each ends, skipping the cells
 *       the file holds, so that it resumes after an interruption;</li>
 *   <li>{@code timing}: the per-step time of each configuration, measured interleaved, into
 *       {@code RESULTS/timing.csv} (run it on a quiet machine);</li>
 *   <li>{@code analyze}: the steps-to-target table, its verdicts and the figures, from the two CSVs.</li>
 * </ul>
 */
@Command(name = "MuonStudy", mixinStandardHelpOptions = true, subcommands = {MuonStudy.Cell.class,
        MuonStudy.Sweep.class, MuonStudy.Timing.class, MuonStudy.Analyze.class},
        description = "The AdamW-against-Muon study on a character-level transformer: one cell, the resumable "
                + "sweep, the timing pass, the analysis.")
public final class MuonStudy implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * Runs the sub-command; exits with 0, 1 for a data or output error, 2 for a usage error (one line each).
     *
     * @param args {@code cell|sweep|timing|analyze ...}; see {@code --help}
     */
    public static void main(String[] args) {
        ExampleCli.main(new MuonStudy(), args);
    }

    @Override
    public Integer call() {
        throw new CommandLine.ParameterException(spec.commandLine(),
                "name a sub-command: cell, sweep, timing or analyze");
    }

    /** The model and data options every training sub-command shares. */
    static final class ModelOptions {
        @Option(names = "--layers", defaultValue = "2", description = "transformer blocks (default: ${DEFAULT-VALUE})")
        int layers;
        @Option(names = "--heads", defaultValue = "4", description = "attention heads (default: ${DEFAULT-VALUE})")
        int heads;
        @Option(names = "--context", defaultValue = "64", description = "context length (default: ${DEFAULT-VALUE})")
        int context;
        @Option(names = "--evals", defaultValue = "" + StudyPlan.EVALS,
                description = "validations after step 0, evenly spaced (default: ${DEFAULT-VALUE})")
        int evals;
        @Option(names = "--weight-decay", defaultValue = "0.1",
                description = "weight decay of both optimizers (default: ${DEFAULT-VALUE})")
        double weightDecay;
        @Option(names = "--data", paramLabel = "FILE", description = "a dictd .dict.dz or .dict file with its "
                + ".index beside it, and only that (default: Debian's dict-gcide, " + GcideCorpus.DEFAULT_DICT + ")")
        Path data;
        @Option(names = "--threads", defaultValue = "1",
                description = "libtorch threads of each run, pinned (default: ${DEFAULT-VALUE})")
        int threads;

        void validate(CommandLine cli) {
            atLeastOne(cli, "--layers", layers);
            atLeastOne(cli, "--heads", heads);
            atLeastOne(cli, "--context", context);
            atLeastOne(cli, "--evals", evals);
            atLeastOne(cli, "--threads", threads);
            if (!(weightDecay >= 0) || !Double.isFinite(weightDecay)) {
                throw new CommandLine.ParameterException(cli, "--weight-decay must be a finite number >= 0, got "
                        + weightDecay);
            }
        }

        String corpusName() {
            return (data == null ? Path.of(GcideCorpus.DEFAULT_DICT) : data).getFileName().toString();
        }
    }

    /** The plan options of the sweep and the timing pass. */
    static final class PlanOptions {
        @Option(names = "--settings", split = ",", paramLabel = "WIDTHxBATCH", defaultValue = "128x32,128x128,256x32",
                description = "the settings, in order (default: ${DEFAULT-VALUE})")
        List<String> settings;
        @Option(names = "--variants-at", split = ",", paramLabel = "WIDTHxBATCH", defaultValue = "128x32",
                description = "the settings whose variants run, or 'none' (default: ${DEFAULT-VALUE})")
        List<String> variantsAt;
        @Option(names = "--adamw-lrs", split = ",", paramLabel = "LR", defaultValue = "5e-4,1e-3,2e-3,4e-3,8e-3",
                description = "AdamW's lr grid (default: ${DEFAULT-VALUE})")
        List<Double> adamwLrs;
        @Option(names = "--muon-lrs", split = ",", paramLabel = "LR", defaultValue = "1e-3,2e-3,4e-3,8e-3,1.6e-2",
                description = "the Muon lr grid, in AdamW's units (default: ${DEFAULT-VALUE})")
        List<Double> muonLrs;
        @Option(names = "--seeds", defaultValue = "5", description = "seeds 1 to N of every configuration "
                + "(default: ${DEFAULT-VALUE})")
        int seeds;
        @Option(names = "--tokens", defaultValue = "" + StudyPlan.TOKENS, description = "characters of training per "
                + "run: steps = tokens / (batch x context) (default: ${DEFAULT-VALUE})")
        long tokens;
        @Option(names = "--max-extensions", defaultValue = "2", description = "points a grid may grow by on each "
                + "side while its best lr is at that edge (default: ${DEFAULT-VALUE})")
        int maxExtensions;

        StudyPlan plan(CommandLine cli, ModelOptions m) {
            try {
                if (seeds < 1) {
                    throw new IllegalArgumentException("--seeds must be >= 1, got " + seeds);
                }
                List<StudySetting> all = new ArrayList<>();
                for (String s : settings) {
                    all.add(StudyPlan.setting(s, "--settings", m.layers, m.heads, m.context, tokens, m.evals,
                            m.weightDecay));
                }
                List<StudySetting> variants = new ArrayList<>();
                if (!(variantsAt.size() == 1 && variantsAt.get(0).equalsIgnoreCase("none"))) {
                    for (String s : variantsAt) {
                        variants.add(StudyPlan.setting(s, "--variants-at", m.layers, m.heads, m.context, tokens,
                                m.evals, m.weightDecay));
                    }
                }
                List<Long> seedList = new ArrayList<>();
                for (long s = 1; s <= seeds; s++) {
                    seedList.add(s);
                }
                return new StudyPlan(all, variants, adamwLrs, muonLrs, seedList, maxExtensions);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(cli, e.getMessage(), e);
            }
        }
    }

    static void atLeastOne(CommandLine cli, String option, long value) {
        if (value < 1) {
            throw new CommandLine.ParameterException(cli, option + " must be >= 1, got " + value);
        }
    }

    /** The corpus and its validation windows, loaded once per command. */
    record Data(CharCorpus corpus, Tensor validation, String name) {
        static Data load(ModelOptions m) {
            CharCorpus corpus = GcideCorpus.load(m.data);
            if (corpus.validationLength() < m.context + 1) {
                throw new DataError((m.data == null ? "" : "--data ") + m.corpusName() + ": its validation text ("
                        + corpus.validationLength() + " characters) is shorter than one window of --context "
                        + m.context);
            }
            System.out.println("corpus: " + corpus.source());
            System.out.printf(Locale.ROOT, "  %,d characters (%,d training, %,d validation), byte-level "
                            + "vocabulary of %d%n", corpus.length(), corpus.trainLength(), corpus.validationLength(),
                    corpus.vocabularySize());
            return new Data(corpus, StudyRun.validationWindows(corpus, m.context), m.corpusName());
        }
    }

    /** One cell. */
    @Command(name = "cell", mixinStandardHelpOptions = true,
            description = "Trains one cell of the study and writes its row.")
    static final class Cell implements Callable<Integer> {
        @CommandLine.Mixin
        ModelOptions model = new ModelOptions();
        @Option(names = "--optimizer", required = true, description = "adamw, muon, normuon, cautious_wd, "
                + "bf16_momentum or hyperball")
        StudyArm arm;
        @Option(names = "--lr", required = true, description = "AdamW's lr (for a Muon optimizer, its AdamW side's)")
        double lr;
        @Option(names = "--muon-lr", description = "the Muon lr, in AdamW's units (MATCH_RMS_ADAMW); Muon "
                + "optimizers only")
        Double muonLr;
        @Option(names = "--seed", defaultValue = "1", description = "seed (default: ${DEFAULT-VALUE})")
        long seed;
        @Option(names = "--width", defaultValue = "128", description = "model width (default: ${DEFAULT-VALUE})")
        int width;
        @Option(names = "--batch", defaultValue = "32", description = "batch size (default: ${DEFAULT-VALUE})")
        int batch;
        @Option(names = "--steps", description = "training steps (default: " + StudyPlan.TOKENS + " / (batch x "
                + "context), the protocol's length)")
        Integer steps;
        @Option(names = "--results", paramLabel = "DIR", description = "append the row to DIR/" + StudyCsv.FILE
                + " (a cell already there is not run again); default: a new run folder under target/runs")
        Path results;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        StudyCell cell() {
            model.validate(spec.commandLine());
            if (arm.muon() && muonLr == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--muon-lr is required for "
                        + arm.id() + ", which has a Muon side");
            }
            int n = steps != null ? steps : (int) (StudyPlan.TOKENS / ((long) Math.max(1, batch) * model.context));
            try {
                return new StudyCell(arm, lr, muonLr == null ? Double.NaN : muonLr, model.weightDecay, seed, width,
                        model.layers, model.heads, model.context, batch, n, model.evals);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage(), e);
            }
        }

        @Override
        public Integer call() {
            StudyCell cell = cell();
            Path folder = results != null ? folder(results, "--results")
                    : RunFolder.create(spec.commandLine(), null, "muon-study", LocalDateTime.now());
            Path csv = folder.resolve(StudyCsv.FILE);
            if (StudyCsv.read(csv).byKey().containsKey(cell.key())) {
                System.out.println("already in " + csv + ": " + cell + " (not run again; remove its row to rerun)");
                return 0;
            }
            useThreads(model.threads);
            try (PointerScope scope = new PointerScope()) {
                Data data = Data.load(model);
                System.out.println("cell: " + cell + "; libtorch threads " + torch.get_num_threads());
                StudyResult r = StudyRun.train(data.corpus(), data.validation(), cell, 1, data.name(),
                        p -> System.out.printf(Locale.ROOT, "step %6.0f  val %.4f  %8.1f s%n", p[0], p[1], p[2]));
                StudyCsv.append(csv, r);
                System.out.printf(Locale.ROOT, "final validation loss %.4f%s; %.1f ms per step; wrote %s%n",
                        r.finalValLoss(), r.diverged() ? " (diverged)" : "", r.msPerStep(), csv);
            }
            return 0;
        }
    }

    /** A results folder, made if missing. */
    static Path folder(Path dir, String option) {
        try {
            return Files.createDirectories(dir).toAbsolutePath().normalize();
        } catch (IOException e) {
            throw new DataError(option + " " + dir + ": cannot make the folder (" + DataError.reason(e) + ")", e);
        }
    }

    /** The protocol's runs, resumable. */
    @Command(name = "sweep", mixinStandardHelpOptions = true,
            description = "Runs the protocol's cells that DIR/" + StudyCsv.FILE + " lacks, appending each as it ends.")
    static final class Sweep implements Callable<Integer> {
        @CommandLine.Mixin
        ModelOptions model = new ModelOptions();
        @CommandLine.Mixin
        PlanOptions planOptions = new PlanOptions();
        @Option(names = "--results", required = true, paramLabel = "DIR",
                description = "the results folder: DIR/" + StudyCsv.FILE + " is read, then appended to")
        Path results;
        @Option(names = "--workers", defaultValue = "1", description = "runs at once, each on --threads libtorch "
                + "threads (default: ${DEFAULT-VALUE})")
        int workers;
        @Option(names = "--max-runs", defaultValue = "0", description = "stop after starting this many runs; 0: "
                + "no limit (default: ${DEFAULT-VALUE})")
        int maxRuns;
        @Option(names = "--dry-run", description = "print where each setting stands and the cells that would run "
                + "next, and run nothing")
        boolean dryRun;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            model.validate(spec.commandLine());
            atLeastOne(spec.commandLine(), "--workers", workers);
            if (maxRuns < 0) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--max-runs must be >= 0, got "
                        + maxRuns);
            }
            StudyPlan plan = planOptions.plan(spec.commandLine(), model);
            Path folder = folder(results, "--results");
            Path csv = folder.resolve(StudyCsv.FILE);
            if (dryRun) {
                printProgress(plan, read(csv), true);
                return 0;
            }
            return SweepLoop.locked(folder, "--results", () -> sweep(plan, csv));
        }

        private Integer sweep(StudyPlan plan, Path csv) {
            Map<String, StudyResult> done = read(csv);
            printProgress(plan, done, false);
            Data data = Data.load(model);
            System.out.printf(Locale.ROOT, "sweep: %d worker(s), %d libtorch thread(s) each; results %s%n", workers,
                    model.threads, csv);
            int started = new SweepLoop<StudyCell, StudyResult>("study-worker", workers, maxRuns).run(
                    () -> plan.pending(done), cell -> runOne(data, cell, csv), (finished, cell, r) -> {
                        // As the file has it (rounded): a resumed sweep then picks the same best lrs as one that
                        // ran through.
                        done.put(cell.key(), StudyCsv.parse(StudyCsv.row(r)));
                        System.out.println(SweepLoop.doneLine(finished, cell, r));
                    });
            List<StudyCell> left = plan.pending(done);
            if (left.isEmpty()) {
                System.out.println("sweep complete: " + done.size() + " runs in " + csv);
            } else {
                System.out.println("stopped after " + started + " runs (--max-runs " + maxRuns + "); " + left.size()
                        + " cells are ready to run next: the same command goes on");
            }
            printProgress(plan, done, false);
            return 0;
        }

        private StudyResult runOne(Data data, StudyCell cell, Path csv) {
            useThreads(model.threads);
            try (PointerScope scope = new PointerScope()) {
                StudyResult r = StudyRun.train(data.corpus(), data.validation(), cell, workers, data.name(), p -> {
                });
                StudyCsv.append(csv, r);
                return r;
            }
        }
    }

    /** The finished runs of a results file, saying which lines were skipped. */
    static Map<String, StudyResult> read(Path csv) {
        StudyCsv.Contents contents = StudyCsv.read(csv);
        if (!contents.skippedLines().isEmpty()) {
            System.out.println(csv + ": lines " + contents.skippedLines() + " are not complete rows (a run cut "
                    + "short while its row was written); their cells run again");
        }
        return new HashMap<>(contents.byKey());
    }

    /** Where each setting stands, and with {@code all}, every cell that is ready to run. */
    static void printProgress(StudyPlan plan, Map<String, StudyResult> done, boolean all) {
        System.out.println("finished runs: " + done.size());
        for (StudySetting s : plan.settings()) {
            StudyPlan.Progress p = plan.progress(s, done);
            System.out.printf(Locale.ROOT, "  %-10s %-15s best AdamW lr %s, best Muon lr %s; %d cells ready%n", s.id(),
                    p.phase(), Double.isNaN(p.bestAdamwLr()) ? "-" : StudyCell.lr(p.bestAdamwLr()),
                    Double.isNaN(p.bestMuonLr()) ? "-" : StudyCell.lr(p.bestMuonLr()), p.pending().size());
            if (all) {
                p.pending().forEach(c -> System.out.println("      " + c));
            }
        }
    }

    /** The timing pass. */
    @Command(name = "timing", mixinStandardHelpOptions = true,
            description = "Measures each configuration's time per training step, interleaved, into DIR/"
                    + StudyTiming.FILE + ".")
    static final class Timing implements Callable<Integer> {
        @CommandLine.Mixin
        ModelOptions model = new ModelOptions();
        @CommandLine.Mixin
        PlanOptions planOptions = new PlanOptions();
        @Option(names = "--results", required = true, paramLabel = "DIR",
                description = "the results folder: the best lrs are read from DIR/" + StudyCsv.FILE + " where it "
                        + "has them, and DIR/" + StudyTiming.FILE + " is appended to")
        Path results;
        @Option(names = "--rounds", defaultValue = "10", description = "rounds over the configurations "
                + "(default: ${DEFAULT-VALUE})")
        int rounds;
        @Option(names = "--steps-per-round", defaultValue = "20", description = "timed steps of each configuration "
                + "per round (default: ${DEFAULT-VALUE})")
        int stepsPerRound;
        @Option(names = "--warm-up", defaultValue = "10", description = "untimed steps of each configuration first "
                + "(default: ${DEFAULT-VALUE})")
        int warmUp;
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            model.validate(spec.commandLine());
            atLeastOne(spec.commandLine(), "--rounds", rounds);
            atLeastOne(spec.commandLine(), "--steps-per-round", stepsPerRound);
            if (warmUp < 0) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--warm-up must be >= 0, got " + warmUp);
            }
            StudyPlan plan = planOptions.plan(spec.commandLine(), model);
            Path folder = folder(results, "--results");
            Map<String, StudyResult> done = read(folder.resolve(StudyCsv.FILE));
            useThreads(model.threads);
            Data data = Data.load(model);
            AssignmentLog.quietly(() -> {
                StudyTiming.run(data, plan, done, rounds, stepsPerRound, warmUp, folder.resolve(StudyTiming.FILE));
                return null;
            });
            return 0;
        }
    }

    /** The analysis. */
    @Command(name = "analyze", mixinStandardHelpOptions = true,
            description = "Writes the steps-to-target table, its verdicts and the figures from DIR/" + StudyCsv.FILE
                    + " and DIR/" + StudyTiming.FILE + ".")
    static final class Analyze implements Callable<Integer> {
        @Option(names = "--results", required = true, paramLabel = "DIR", description = "the results folder")
        Path results;
        @Option(names = "--out", paramLabel = "DIR", description = "where the table and figures go (default: the "
                + "results folder)")
        Path out;

        @Override
        public Integer call() {
            Path folder = results.toAbsolutePath().normalize();
            if (!Files.isRegularFile(folder.resolve(StudyCsv.FILE))) {
                throw new DataError("--results " + results + ": holds no " + StudyCsv.FILE + "; run the sweep first");
            }
            Path target = folder(out == null ? folder : out, "--out");
            StudyAnalysis.run(folder, target);
            return 0;
        }
    }

    /**
     * Bounds both CPU thread pools a run uses to {@code threads}: libtorch's intra-op pool, and OpenBLAS's, on which
     * libtorch's float32 products run and which starts one thread per core whatever libtorch was told. The OpenBLAS
     * pool is one per process, shared by the sweep's workers: left at two threads on 2 cores with two workers of one
     * thread each, it kept a third thread busy beside them, and a step at {@code 128x32} took 335 ms instead of 81.
     *
     * @param threads the threads of each run
     */
    static void useThreads(int threads) {
        torch.set_num_threads(threads);
        openblas_nolapack.blas_set_num_threads(threads);
    }

}
