package dev.muon.examples.study;

import dev.muon.examples.ExampleCli;
import org.bytedeco.javacpp.PointerScope;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The second study's sweep (docs/examples.md, "The second study: protocol"): asks {@link SecondPlan} for the cells
 * the protocol needs next, trains them ({@link SecondRun}) on GCIDE and FOLDOC, appends each run's row to
 * {@code OUT/runs.csv} when it ends, and asks again, until nothing is pending. Stopped anywhere (a kill included),
 * the same command goes on where it stopped: a cell whose key the file holds is not run again. {@code --plan}
 * prints where each stage stands, the cells ready to run and the CPU-hours left, and runs nothing.
 *
 * <p>Run from the repository root as
 * {@code mvn -B -q -Ptrain -DskipTests package -Dexample.main=dev.muon.examples.study.SecondStudy
 * -Dexample.args="--out ../docs/data/second-study"}.
 */
@Command(name = "SecondStudy", mixinStandardHelpOptions = true,
        description = "The second study's resumable sweep: tuned AdamW, AdamW-2lr, MuonAdamW and ten variants on "
                + "GCIDE and FOLDOC, run as docs/examples.md's protocol says.")
public final class SecondStudy implements Callable<Integer> {
    /** The libtorch (and OpenBLAS) threads of each run: the protocol's one. */
    static final int THREADS = 1;

    // Required, checked in validate(): picocli would report a missing --out before an unknown option.
    @Option(names = "--out", paramLabel = "DIR", description = "the results folder (required): DIR/"
            + SecondCsv.FILE + " is read, then appended to, one row per finished run")
    Path out;
    @Option(names = "--gcide", paramLabel = "FILE", description = "GCIDE's dictd .dict.dz or .dict file with its "
            + ".index beside it (default: Debian's dict-gcide, " + GcideCorpus.DEFAULT_DICT + ")")
    Path gcide;
    @Option(names = "--foldoc", paramLabel = "FILE", description = "FOLDOC's dictd .dict.dz or .dict file with its "
            + ".index beside it (default: Debian's dict-foldoc, " + FoldocCorpus.DEFAULT_DICT + ")")
    Path foldoc;
    @Option(names = "--workers", defaultValue = "2", description = "runs at once, each on " + THREADS
            + " libtorch thread (default: ${DEFAULT-VALUE})")
    int workers;
    @Option(names = "--max-runs", defaultValue = "0", description = "stop after starting this many runs, for a "
            + "session with limited time; 0: no limit (default: ${DEFAULT-VALUE})")
    int maxRuns;
    @Option(names = "--plan", description = "print where each stage stands, the cells ready to run and the "
            + "CPU-hours left, and run nothing")
    boolean plan;
    @Option(names = "--analyze", description = "write the protocol's analysis of DIR/" + SecondCsv.FILE + " (and "
            + "DIR/" + SecondTiming.FILE + " where the timing pass ran) to DIR/" + SecondAnalysis.FILE
            + ", its figures to DIR/" + SecondFigures.CURVES + " and DIR/" + SecondFigures.RATIOS + " (each once "
            + "its runs are there), and run nothing")
    boolean analyze;
    @Option(names = "--timing", description = "run the timing pass of every arm's tuned GCIDE B1 configuration at "
            + "one and two threads into DIR/" + SecondTiming.FILE + " (after the sweep, on a machine with nothing "
            + "else running), instead of the sweep")
    boolean timing;
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Where the sweep reports: picocli's out, standard output unless a test captures it. */
    private PrintWriter log;
    /** The model and measurements of the runs; tests make them smaller. */
    SecondScale scale = SecondScale.PROTOCOL;
    /** Where the packages put the dictionaries; tests move them. */
    Path gcideDefault = Path.of(GcideCorpus.DEFAULT_DICT);
    Path foldocDefault = Path.of(FoldocCorpus.DEFAULT_DICT);

    /**
     * Runs the sweep; exits with 0, 1 for a data or output error, 2 for a usage error (one line each).
     *
     * @param args the options; see {@code --help}
     */
    public static void main(String[] args) {
        ExampleCli.main(new SecondStudy(), args);
    }

    /**
     * Checks the options picocli cannot.
     *
     * @param cli the command line, for the error
     * @throws CommandLine.ParameterException naming the option, the rule and the value
     */
    void validate(CommandLine cli) {
        if (out == null) {
            throw new CommandLine.ParameterException(cli, "Missing required option: '--out=DIR'");
        }
        if (workers < 1) {
            throw new CommandLine.ParameterException(cli, "--workers must be >= 1, got " + workers);
        }
        if (maxRuns < 0) {
            throw new CommandLine.ParameterException(cli, "--max-runs must be >= 0 (0: no limit), got " + maxRuns);
        }
        if ((plan ? 1 : 0) + (analyze ? 1 : 0) + (timing ? 1 : 0) > 1) {
            throw new CommandLine.ParameterException(cli, "--plan, --analyze and --timing each replace the sweep; "
                    + "name at most one, got" + (plan ? " --plan" : "") + (analyze ? " --analyze" : "")
                    + (timing ? " --timing" : ""));
        }
    }

    @Override
    public Integer call() throws Exception {
        validate(spec.commandLine());
        log = spec.commandLine().getOut();
        Path csv = out.toAbsolutePath().normalize().resolve(SecondCsv.FILE);
        if (plan) {
            printPlan(read(csv), true);
            return 0;
        }
        if (analyze) {
            Path folder = out.toAbsolutePath().normalize();
            Path report = folder.resolve(SecondAnalysis.FILE);
            List<SecondResult> results = SecondCsv.read(csv).results();
            SecondAnalysis.write(results, SecondTiming.read(folder.resolve(SecondTiming.FILE)), report);
            log.println("wrote " + report);
            for (Path figure : SecondFigures.write(results, folder)) {
                log.println("wrote " + figure);
            }
            return 0;
        }
        Path folder = MuonStudy.folder(out, "--out");
        return SweepLoop.locked(folder, "--out", () -> timing ? timingPass(csv, folder) : sweep(csv));
    }

    /** The timing pass, under the sweep's lock: it needs the machine to itself. */
    private Integer timingPass(Path csv, Path folder) {
        Map<String, Double> finals = read(csv).finals();
        List<SecondCell> configs = SecondTiming.configurations(SecondPlan.progress(SecondPlan.STAGES.get(0), finals)
                .tuned());
        SecondTiming.run(gcideData(), configs, scale, SecondTiming.ROUNDS, SecondTiming.STEPS_PER_ROUND,
                SecondTiming.WARM_UP, folder.resolve(SecondTiming.FILE), log);
        return 0;
    }

    /**
     * The finished runs: their final losses, which the plan reads, and their cells, which the estimate prices.
     *
     * @param finals the final losses by key, NaN for a diverged run
     * @param cells  the cells by key
     */
    private record Finished(Map<String, Double> finals, Map<String, SecondCell> cells) {
        void add(SecondResult r) {
            // As the file has it (rounded): a resumed sweep then picks the same best configurations as one that
            // ran through.
            finals.put(r.cell().key(), SecondCsv.parse(SecondCsv.row(r)).finalValLoss());
            cells.put(r.cell().key(), r.cell());
        }
    }

    /** The finished runs of the results file, saying which lines were skipped. */
    private Finished read(Path csv) {
        SecondCsv.Contents contents = SecondCsv.read(csv);
        if (!contents.skippedLines().isEmpty()) {
            log.println(csv + ": lines " + contents.skippedLines() + " are not complete rows (a run cut "
                    + "short while its row was written); their cells run again");
        }
        return new Finished(new HashMap<>(contents.finals()), new HashMap<>(contents.cells()));
    }

    /** Both corpora, loaded before any run: a missing package stops the sweep before it starts, not hours in. */
    /** GCIDE's data: the --gcide file, or Debian's. */
    private SecondData gcideData() {
        Path g = gcide == null ? gcideDefault : gcide;
        return SecondData.of("gcide", GcideCorpus.load(gcide, gcideDefault, "--gcide"), g, "--gcide", scale);
    }

    private Map<String, SecondData> load() {
        Map<String, SecondData> data = new HashMap<>();
        data.put("gcide", gcideData());
        Path f = foldoc == null ? foldocDefault : foldoc;
        data.put("foldoc", SecondData.of("foldoc", FoldocCorpus.load(foldoc, foldocDefault, "--foldoc"), f,
                "--foldoc", scale));
        for (String id : List.of("gcide", "foldoc")) {
            log.println("corpus " + data.get(id).describe());
        }
        return data;
    }

    private Integer sweep(Path csv) {
        Finished finished = read(csv);
        Map<String, Double> finals = finished.finals();
        printPlan(finished, false);
        Map<String, SecondData> data = load();
        log.printf(Locale.ROOT, "sweep: %d worker(s), %d libtorch thread each; results %s%n", workers,
                THREADS, csv);
        int started = new SweepLoop<SecondCell, SecondResult>("second-study-worker", workers, maxRuns).run(
                () -> SecondPlan.pending(finals), cell -> runOne(data.get(cell.corpus()), cell, csv),
                (done, cell, r) -> {
                    finished.add(r);
                    log.println(SweepLoop.doneLine(done, cell, r));
                });
        if (SecondPlan.pending(finals).isEmpty()) {
            log.println("sweep complete: " + finals.size() + " runs in " + csv);
        } else {
            log.println("stopped after " + started + " runs (--max-runs " + maxRuns + "); the same command "
                    + "goes on");
        }
        printPlan(finished, false);
        return 0;
    }

    private SecondResult runOne(SecondData data, SecondCell cell, Path csv) {
        MuonStudy.useThreads(THREADS);
        try (PointerScope scope = new PointerScope()) {
            SecondResult r = SecondRun.train(data, cell, scale, workers, p -> {
            });
            SecondCsv.append(csv, r);
            return r;
        }
    }

    /** Where each stage stands, the estimate of what is left, and with {@code all} every cell ready to run. */
    private void printPlan(Finished finished, boolean all) {
        Map<String, Double> finals = finished.finals();
        log.println("finished runs: " + finals.size());
        List<SecondCell> ready = new ArrayList<>();
        for (SecondPlan.Stage s : SecondPlan.STAGES) {
            SecondPlan.Progress p = SecondPlan.progress(s, finals);
            log.printf(Locale.ROOT, "  %-12s %-40s %4d cells ready%n", s.id(), p.phase(), p.pending().size());
            p.tuned().forEach((arm, c) -> log.println("      tuned " + configuration(c)
                    + (p.atEdge().contains(arm) ? " (lr at the edge of its grid, its extension spent)" : "")));
            ready.addAll(p.pending());
        }
        double readySeconds = ready.stream().mapToDouble(SecondPlan::cpuSeconds).sum();
        log.printf(Locale.ROOT, "ready to run now: %d cells, %.1f CPU-hours%n", ready.size(),
                readySeconds / 3600);
        if (all) {
            ready.forEach(c -> log.println("      " + c));
        }
        SecondProjection.Left left = SecondProjection.left(finished.cells().values(), ready);
        log.printf(Locale.ROOT, "left: about %d runs, %.1f CPU-hours at the first study's cost per step, %.1f hours "
                        + "with %d worker(s) on as many cores (the protocol's %d runs less those finished; each "
                        + "lr-edge extension adds 3 runs)%n", left.runs(), left.cpuHours(), left.cpuHours() / workers,
                workers, SecondProjection.protocol().runs());
    }

    /** A tuned configuration without its seed, for the report. */
    static String configuration(SecondCell c) {
        StringBuilder s = new StringBuilder(c.arm().id()).append(": ");
        if (c.arm() == SecondArm.ADAMW) {
            s.append("lr ").append(StudyCell.lr(c.adamwLr()));
        } else {
            s.append(c.arm() == SecondArm.ADAMW_2LR ? "hidden lr " : "lr ").append(StudyCell.lr(c.lr2()))
                    .append(c.arm() == SecondArm.ADAMW_2LR ? ", rest " : ", AdamW side ")
                    .append(StudyCell.lr(c.adamwLr()));
        }
        s.append(", beta2 ").append(c.beta2()).append(", weight decay ").append(c.weightDecay());
        if (!Double.isNaN(c.radius())) {
            s.append(", radius ").append(c.radius());
        }
        return s.toString();
    }
}
