package dev.muon.examples;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Trains a small character-level transformer ({@link CharTransformer}) twice on the same text, batches and
 * initial weights: once with libtorch's {@code AdamW}, once with {@link MuonAdamW} built by
 * {@link MuonAdamW#dropIn} from the same {@code AdamWOptions}. It prints the validation loss of both at the same
 * number of steps and at the same training time, and writes the curves as CSV and PNG. The two runs are stepped
 * alternately, so that a machine whose load changes slows both alike; evaluation time is not counted.
 *
 * <p>The attention and MLP matrices go to Muon; the token and position embeddings ({@code tok_emb},
 * {@code pos_emb}), the output head ({@code lm_head}), biases and LayerNorm gains stay on AdamW, as the
 * assignment table logged by {@code MuonAdamW} shows.
 *
 * <p>With {@code --compare normuon} the two runs are instead {@code MuonAdamW.dropIn} ("Muon") and the same
 * optimizer with NorMuon's neuron-wise normalization ({@link MuonConfig#withNorMuon}, "NorMuon"); both give their
 * Muon updates the RMS {@code 0.2·lr}, so they compare at the same lr and the same number of steps.
 *
 * <p>The text is Debian's {@code fortunes} data ({@code apt-get install fortunes}), or {@code --data PATH}; without
 * either, a short embedded text, announced as such. Run with
 * <pre>{@code
 * mvn -B -q -Ptrain -DskipTests package -Dexample.main=dev.muon.examples.TinyGpt -Dexample.args="--steps 500"
 * }</pre>
 * Options (defaults in brackets): {@code --steps} [500], {@code --width} [128], {@code --layers} [2],
 * {@code --heads} [4], {@code --context} [64], {@code --batch} [32], {@code --lr} [3e-3],
 * {@code --weight-decay} [0.1], {@code --seed} [1337], {@code --eval-every} [25], {@code --val-batches} [8], {@code --threads} [1],
 * {@code --out} [a new {@code target/runs/tinygpt-<date>-<time>}], {@code --data} [the fortunes directory],
 * {@code --compare} [adamw], {@code --docs} [none: the docs' figure and CSV are written only when asked].
 */
public final class TinyGpt {
    private static final int WARM_UP_STEPS = 5;

    private TinyGpt() {
    }

    /** One evaluation: after {@code step} steps and {@code seconds} of training (evaluations not counted). */
    record Point(int step, double seconds, double trainLoss, double valLoss) {
    }

    /** One optimizer's run. */
    record Run(String name, List<Point> points) {
        Point last() {
            return points.get(points.size() - 1);
        }

        /** The last evaluation at or before {@code step}. */
        Point atStep(int step) {
            return lastWhere(p -> p.step() <= step);
        }

        /** The last evaluation taken within {@code seconds} of training. */
        Point atSeconds(double seconds) {
            return lastWhere(p -> p.seconds() <= seconds);
        }

        /** The last evaluation that {@code within} accepts; the first evaluation where it accepts none. */
        private Point lastWhere(Predicate<Point> within) {
            Point found = points.get(0);
            for (Point p : points) {
                if (within.test(p)) {
                    found = p;
                }
            }
            return found;
        }
    }

    /** Which two optimizers a run compares. */
    enum Comparison {
        /** libtorch's AdamW against {@code MuonAdamW.dropIn}. */
        ADAMW,
        /** {@code MuonAdamW.dropIn} against the same with NorMuon on. */
        NORMUON
    }

    /** The command-line settings; see the class comment or {@code --help}. */
    record Settings(int steps, int width, int layers, int heads, int context, int batch, double lr,
                    double weightDecay, long seed, int evalEvery, int valBatches, int threads, Path out,
                    Path data, Comparison comparison, Path docs) {
        /** The name of the run's files, {@code tinygpt} or {@code tinygpt-normuon}, as docs/examples.md has them. */
        String fileName() {
            return comparison == Comparison.NORMUON ? "tinygpt-normuon" : "tinygpt";
        }

        /**
         * Parses the options.
         *
         * @throws IllegalArgumentException naming the option, for an unknown option, a value that does not parse,
         *                                  or a count below 1
         */
        static Settings parse(String... args) {
            Options o = new Options();
            try {
                ExampleCli.commandLine(o).parseArgs(args);
            } catch (CommandLine.ParameterException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
            return o.settings();
        }
    }

    /** The picocli options behind {@link Settings}. */
    @Command(name = "TinyGpt", mixinStandardHelpOptions = true,
            description = "Trains a character-level transformer with AdamW and with MuonAdamW.dropIn on the same "
                    + "options, and compares them by step and by training time.")
    static final class Options implements Callable<Integer> {
        @Option(names = "--steps", defaultValue = "500", description = "training steps (default: ${DEFAULT-VALUE})")
        int steps;
        @Option(names = "--width", defaultValue = "128", description = "model width d (default: ${DEFAULT-VALUE})")
        int width;
        @Option(names = "--layers", defaultValue = "2", description = "transformer blocks (default: ${DEFAULT-VALUE})")
        int layers;
        @Option(names = "--heads", defaultValue = "4", description = "attention heads (default: ${DEFAULT-VALUE})")
        int heads;
        @Option(names = "--context", defaultValue = "64", description = "context length (default: ${DEFAULT-VALUE})")
        int context;
        @Option(names = "--batch", defaultValue = "32", description = "batch size (default: ${DEFAULT-VALUE})")
        int batch;
        @Option(names = "--lr", defaultValue = "3e-3", description = "AdamW lr, also Muon's through the drop-in "
                + "(default: ${DEFAULT-VALUE})")
        double lr;
        @Option(names = "--weight-decay", defaultValue = "0.1", description = "weight decay (default: ${DEFAULT-VALUE})")
        double weightDecay;
        @Option(names = "--seed", defaultValue = "1337", description = "seed (default: ${DEFAULT-VALUE})")
        long seed;
        @Option(names = "--eval-every", defaultValue = "25",
                description = "steps between validations (default: ${DEFAULT-VALUE})")
        int evalEvery;
        @Option(names = "--val-batches", defaultValue = "8",
                description = "validation batches (default: ${DEFAULT-VALUE})")
        int valBatches;
        @Option(names = "--threads", defaultValue = "1",
                description = "libtorch threads, pinned (default: ${DEFAULT-VALUE})")
        int threads;
        @Option(names = "--out", paramLabel = "DIR", description = "the run's folder, new or empty (default: a new "
                + "target/runs/tinygpt-<date>-<time>)")
        Path out;
        @Option(names = "--docs", paramLabel = "DIR", description = "also write the figure and CSV of this run into "
                + "the docs folder DIR under the names docs/examples.md shows (../docs from the examples module), "
                + "replacing the published ones")
        Path docs;
        @Option(names = "--data", paramLabel = "PATH",
                description = "a text file or folder, and only that (default: Debian's fortunes)")
        Path data;
        @Option(names = "--compare", defaultValue = "adamw",
                description = "adamw: AdamW against MuonAdamW.dropIn; normuon: MuonAdamW.dropIn against the same "
                        + "with NorMuon (default: ${DEFAULT-VALUE})")
        Comparison comparison;

        Settings settings() {
            for (Map.Entry<String, Integer> e : Map.of("--steps", steps, "--width", width, "--layers", layers,
                    "--heads", heads, "--context", context, "--batch", batch, "--eval-every", evalEvery,
                    "--val-batches", valBatches, "--threads", threads).entrySet()) {
                if (e.getValue() < 1) {
                    throw new IllegalArgumentException(e.getKey() + " must be >= 1, got " + e.getValue());
                }
            }
            if (docs != null && !Files.isDirectory(docs)) {
                throw new IllegalArgumentException("--docs must be an existing folder, got " + docs);
            }
            return new Settings(steps, width, layers, heads, context, batch, lr, weightDecay, seed, evalEvery,
                    valBatches, threads, out, data, comparison, docs);
        }

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() {
            Settings s;
            try {
                s = settings();
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage(), e);
            }
            Path runDir = RunFolder.create(spec.commandLine(), s.out(), s.fileName(), LocalDateTime.now());
            run(s, runDir);
            return 0;
        }
    }

    /**
     * Runs the comparison; exits with 0, 1 for a data or output error, 2 for a usage error (one line on stderr each).
     *
     * @param args options, see {@code --help}
     */
    public static void main(String[] args) {
        ExampleCli.main(new Options(), args);
    }

    /** Trains, prints the tables, and writes the curves into the run's folder (and the docs, if asked). */
    private static void run(Settings s, Path runDir) {
        // These matrices are small (128 x 512 at most), so a second thread buys little, and on a machine whose
        // cores are shared, libtorch's spinning worker threads made every step 20x slower in our runs.
        torch.set_num_threads(s.threads());
        CharCorpus corpus = CharCorpus.load(s.data());
        if (corpus.validationLength() < s.context() + 2) {
            throw new DataError("--data " + s.data() + ": " + corpus.length() + " characters are too few for "
                    + "--context " + s.context() + ": its last 10 % (the validation text) must hold more than "
                    + (s.context() + 1));
        }
        System.out.println(s.comparison() == Comparison.NORMUON
                ? "Muon for the JVM: TinyGpt, MuonAdamW.dropIn against the same with NorMuon"
                : "Muon for the JVM: TinyGpt, AdamW against MuonAdamW.dropIn on the same AdamWOptions");
        System.out.println("corpus: " + corpus.source());
        System.out.println("run folder: " + runDir);
        System.out.printf(Locale.ROOT, "  %,d characters (%,d train, %,d validation), vocabulary %d%n",
                corpus.length(), corpus.trainLength(), corpus.validationLength(), corpus.vocabularySize());
        System.out.printf(Locale.ROOT, "model: %d layers, d = %d, %d heads, context %d; batch %d, %d steps,"
                        + " lr %g, weight decay %g, seed %d, libtorch threads %d%n", s.layers(), s.width(),
                s.heads(), s.context(), s.batch(), s.steps(), s.lr(), s.weightDecay(), s.seed(),
                torch.get_num_threads());

        OptionalDouble loadAtStart = MachineLoad.now();
        List<Run> runs = compare(corpus, s);
        String load = MachineLoad.note(loadAtStart, MachineLoad.now());
        printTables(runs, s);
        String title = figureTitle(s.comparison(), s.width(), s.layers(), s.batch());
        List<Path> written = new ArrayList<>(TinyGptCurves.write(runs, runDir.resolve(s.fileName() + ".csv"),
                runDir.resolve(s.fileName() + ".png"), title, load));
        if (s.docs() != null) {
            Path docs = s.docs().toAbsolutePath().normalize();
            written.addAll(TinyGptCurves.write(runs, docs.resolve("data").resolve(s.fileName() + ".csv"),
                    docs.resolve(s.fileName() + ".png"), title, load));
        }
        for (Path p : written) {
            System.out.println("wrote " + p);
        }
    }

    /**
     * The figure's title: what is compared, on which model.
     *
     * @param comparison the two optimizers
     * @param width      the model width
     * @param layers     the blocks
     * @param batch      the batch size
     * @return the title
     */
    static String figureTitle(Comparison comparison, int width, int layers, int batch) {
        return (comparison == Comparison.NORMUON ? "TinyGpt: Muon against NorMuon"
                : "TinyGpt: AdamW against MuonAdamW.dropIn") + String.format(Locale.ROOT,
                " (d = %d, %d layers, batch %d)", width, layers, batch);
    }

    /**
     * Trains with AdamW and with MuonAdamW, one step of each in turn, from the same initial weights and on the
     * same batches, after an untimed warm-up of both.
     *
     * @param corpus the text
     * @param s      the settings
     * @return the AdamW run, then the MuonAdamW run
     */
    static List<Run> compare(CharCorpus corpus, Settings s) {
        try (PointerScope scope = new PointerScope()) {
            // One fixed validation set, drawn once, so both optimizers are scored on the same windows.
            Random valRandom = new Random(s.seed() + 1);
            List<Tensor> validation = new ArrayList<>();
            for (int i = 0; i < s.valBatches(); i++) {
                validation.add(corpus.batch(valRandom, true, s.batch(), s.context()));
            }
            Function<CharTransformer, Stepper> withAdamW = model -> {
                AdamW opt = new AdamW(model.parameters(), adamwOptions(s));
                return new Stepper(opt::zero_grad, opt::step);
            };
            Function<CharTransformer, Stepper> withMuon = model -> {
                // The one changed line. Building it logs the assignment table (which parameter went where, why).
                MuonAdamW opt = MuonAdamW.dropIn(model.named_parameters(), adamwOptions(s));
                return new Stepper(opt::zero_grad, opt::step);
            };
            Function<CharTransformer, Stepper> withNorMuon = model -> {
                // The drop-in's Muon settings (AdamW's lr and weight decay, RMS-matched), with NorMuon on.
                MuonConfig muon = MuonConfig.defaults().withLr(s.lr()).withWeightDecay(s.weightDecay())
                        .withAdjustLr(AdjustLr.MATCH_RMS_ADAMW).withNorMuon(NorMuonConfig.defaults());
                MuonAdamW opt = MuonAdamW.builder(model.named_parameters()).muon(muon)
                        .adamW(AdamWConfig.of(adamwOptions(s))).build();
                return new Stepper(opt::zero_grad, opt::step);
            };
            boolean norMuon = s.comparison() == Comparison.NORMUON;
            Function<CharTransformer, Stepper> first = norMuon ? withMuon : withAdamW;
            Function<CharTransformer, Stepper> second = norMuon ? withNorMuon : withMuon;
            // The first steps in a JVM pay for the JIT and libtorch's thread pool and allocator; without this
            // untimed warm-up they would be charged to whichever optimizer runs first.
            warmUp(corpus, s, first);
            warmUp(corpus, s, second);
            return interleave(List.of(new Trial(norMuon ? "Muon" : "AdamW", corpus, s, first),
                    new Trial(norMuon ? "NorMuon" : "MuonAdamW", corpus, s, second)), validation, s);
        }
    }

    private static AdamWOptions adamwOptions(Settings s) {
        AdamWOptions options = new AdamWOptions(s.lr());
        options.weight_decay().put(s.weightDecay());
        return options;
    }

    /** How a run clears gradients and steps, whichever optimizer it holds. */
    public record Stepper(Runnable zeroGrad, Runnable step) {
    }

    private static void warmUp(CharCorpus corpus, Settings s, Function<CharTransformer, Stepper> optimizerFor) {
        try (PointerScope scope = new PointerScope()) {
            CharTransformer model = new CharTransformer(corpus.vocabularySize(), s.context(), s.width(),
                    s.layers(), s.heads());
            // The assignment table is logged once, by the timed run; the throwaway optimizer keeps quiet.
            Stepper optimizer = AssignmentLog.quietly(() -> optimizerFor.apply(model));
            Random batches = new Random(-1);
            for (int i = 0; i < WARM_UP_STEPS; i++) {
                step(model, optimizer, corpus.batch(batches, false, s.batch(), s.context()), s.context());
            }
        }
    }

    /** One training step in its own scope; returns the loss. */
    public static double step(CharTransformer model, Stepper optimizer, Tensor batch, int context) {
        try (PointerScope stepScope = new PointerScope()) {
            optimizer.zeroGrad().run();
            Tensor loss = loss(model, batch, context);
            loss.backward();
            optimizer.step().run();
            return loss.item_double();
        }
    }

    /**
     * One optimizer's training run, advanced one step at a time so that two runs can be interleaved: both then see
     * the same background load on a shared machine, which keeps the time comparison fair.
     */
    private static final class Trial {
        private final String name;
        private final CharCorpus corpus;
        private final Settings s;
        private final CharTransformer model;
        private final Stepper optimizer;
        private final Random batches;
        private final List<Point> points = new ArrayList<>();
        private double seconds;
        private double trainLoss;
        private int sinceEval;

        Trial(String name, CharCorpus corpus, Settings s, Function<CharTransformer, Stepper> optimizerFor) {
            this.name = name;
            this.corpus = corpus;
            this.s = s;
            // Same seed for both trials: the same initial weights and the same sequence of batches.
            torch.manual_seed(s.seed());
            this.model = new CharTransformer(corpus.vocabularySize(), s.context(), s.width(), s.layers(),
                    s.heads());
            this.optimizer = optimizerFor.apply(model);
            this.batches = new Random(s.seed());
        }

        void step() {
            long start = System.nanoTime();
            try (PointerScope batchScope = new PointerScope()) {
                trainLoss += TinyGpt.step(model, optimizer, corpus.batch(batches, false, s.batch(), s.context()),
                        s.context());
            }
            seconds += (System.nanoTime() - start) / 1e9;
            sinceEval++;
        }

        Point evaluate(int step, List<Tensor> validation) {
            Point p = new Point(step, seconds, sinceEval == 0 ? Double.NaN : trainLoss / sinceEval,
                    validationLoss(model, validation, s.context()));
            points.add(p);
            trainLoss = 0;
            sinceEval = 0;
            return p;
        }

        Run run() {
            return new Run(name, List.copyOf(points));
        }
    }

    private static List<Run> interleave(List<Trial> trials, List<Tensor> validation, Settings s) {
        for (Trial trial : trials) {
            trial.evaluate(0, validation);
        }
        for (int step = 1; step <= s.steps(); step++) {
            for (Trial trial : trials) {
                trial.step();
            }
            if (step % s.evalEvery() == 0 || step == s.steps()) {
                StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "step %5d/%d", step, s.steps()));
                for (Trial trial : trials) {
                    Point p = trial.evaluate(step, validation);
                    line.append(String.format(Locale.ROOT, "  | %-9s train %.4f val %.4f %6.1f s %4.0f ms/step",
                            trial.name, p.trainLoss(), p.valLoss(), p.seconds(), 1000 * p.seconds() / step));
                }
                System.out.println(line);
            }
        }
        List<Run> runs = new ArrayList<>();
        for (Trial trial : trials) {
            runs.add(trial.run());
        }
        return runs;
    }

    /** Mean next-character cross-entropy over a [batch, context + 1] window of ids. */
    public static Tensor loss(CharTransformer model, Tensor batch, int context) {
        Tensor inputs = batch.narrow(1, 0, context);
        Tensor targets = batch.narrow(1, 1, context).reshape(-1);
        Tensor logits = model.forward(inputs);
        return torch.cross_entropy_loss(logits.reshape(-1, logits.size(2)), targets);
    }

    private static double validationLoss(CharTransformer model, List<Tensor> validation, int context) {
        double sum = 0;
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            for (Tensor batch : validation) {
                sum += loss(model, batch, context).item_double();
            }
        }
        return sum / validation.size();
    }

    /**
     * The evaluated steps at or before each quarter of the run, each once and none of them step 0: with few
     * evaluations (25 steps, one every 25) several quarters fall on the same one.
     *
     * @param run   a run
     * @param steps the run's length
     * @return the steps, ascending
     */
    static List<Integer> quarterSteps(Run run, int steps) {
        java.util.TreeSet<Integer> out = new java.util.TreeSet<>();
        for (int quarter = 1; quarter <= 4; quarter++) {
            int step = run.atStep(steps * quarter / 4).step();
            if (step > 0) {
                out.add(step);
            }
        }
        return List.copyOf(out);
    }

    private static void printTables(List<Run> runs, Settings s) {
        Run adamw = runs.get(0);
        Run muon = runs.get(1);
        String difference = muon.name() + " - " + adamw.name();
        System.out.println();
        System.out.println("Validation loss at the same number of steps (nats per character):");
        System.out.printf(Locale.ROOT, "| %6s | %10s | %10s | %8s |%n", "step", adamw.name(), muon.name(), difference);
        System.out.println("| ---: | ---: | ---: | ---: |");
        for (int step : quarterSteps(adamw, s.steps())) {
            double a = adamw.atStep(step).valLoss();
            double m = muon.atStep(step).valLoss();
            System.out.printf(Locale.ROOT, "| %6d | %10.4f | %10.4f | %+8.4f |%n", step, a, m, m - a);
        }
        System.out.println();
        System.out.println("Validation loss at the same training time (evaluation time not counted):");
        System.out.printf(Locale.ROOT, "| seconds | %1$s step | %1$s | %2$s step | %2$s | %3$s |%n", adamw.name(),
                muon.name(), difference);
        System.out.println("| ---: | ---: | ---: | ---: | ---: | ---: |");
        double budget = Math.min(adamw.last().seconds(), muon.last().seconds());
        Point previousA = adamw.points().get(0);
        Point previousM = muon.points().get(0);
        for (int quarter = 1; quarter <= 4; quarter++) {
            double t = budget * quarter / 4;
            Point a = adamw.atSeconds(t);
            Point m = muon.atSeconds(t);
            // A quarter that reaches no evaluation beyond the last row's would repeat it.
            if (a == previousA && m == previousM) {
                continue;
            }
            previousA = a;
            previousM = m;
            System.out.printf(Locale.ROOT, "| %7.1f | %10d | %.4f | %14d | %.4f | %+.4f |%n", t, a.step(),
                    a.valLoss(), m.step(), m.valLoss(), m.valLoss() - a.valLoss());
        }
        System.out.println();
        System.out.printf(Locale.ROOT, "| optimizer | final val loss | steps | training s | ms/step |%n");
        System.out.println("| --- | ---: | ---: | ---: | ---: |");
        for (Run run : runs) {
            Point last = run.last();
            System.out.printf(Locale.ROOT, "| %s | %.4f | %d | %.1f | %.0f |%n", run.name(), last.valLoss(),
                    last.step(), last.seconds(), 1000 * last.seconds() / last.step());
        }
    }
}
