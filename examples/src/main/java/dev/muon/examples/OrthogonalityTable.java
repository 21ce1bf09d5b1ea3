package dev.muon.examples;

import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.MuonState;
import dev.muon.OptimizerKind;
import dev.muon.orthogonalize.NewtonSchulz;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * How orthogonal Muon's Newton–Schulz output is on the updates of real training (issue 58): trains the examples'
 * models a few steps with {@link MuonAdamW#dropIn} exactly as {@link FashionMnist} and {@link TinyGpt} do (their
 * default sizes, data, seeds, batches, lr and weight decay), and after the chosen steps takes each Muon matrix's
 * Newton–Schulz input {@code U} and measures, with {@link PolarDistances}, plain Newton–Schulz with five and four
 * of Keller Jordan's steps and AOL with four ({@code MuonConfig.withAol()}), each in float32 and bfloat16, against
 * the exact polar factor (float64 SVD).
 *
 * <p>{@code U} is the optimizer's own input, rebuilt from the public API after the step: the momentum buffer
 * {@code B} ({@link MuonAdamW#muonState}) and the gradient {@code g}, still in place until the next
 * {@code zeroGrad}, give {@code U = g.lerp(B, μ)} with Nesterov, {@code B} without ({@code docs/algorithm.md},
 * "The update"); a conv filter is flattened to {@code [out, in·kh·kw]}, as Muon flattens it. Each row's
 * "update check" confirms it: the parameter's change, undone of weight decay and divided by the scaled lr, against
 * the optimizer's own Newton–Schulz of {@code U} (relative Frobenius distance; float32 rounding of the parameters
 * puts it near 1e-4, a wrong {@code U} near 1).
 *
 * <p>Prints one row per matrix, then the summary over matrices, as Markdown tables. Run with
 * <pre>{@code
 * mvn -B -q -Ptrain -DskipTests package -Dexample.main=dev.muon.examples.OrthogonalityTable
 * }</pre>
 * Options (defaults in brackets): {@code --models} [mlp,cnn,tinygpt], {@code --at} [1,10,50] (the steps after
 * which the inputs are measured), {@code --threads} [2], {@code --data} [Debian's {@code dataset-fashion-mnist},
 * else a generated stand-in, announced], {@code --text} [Debian's {@code fortunes}, else an embedded text,
 * announced].
 */
@Command(name = "OrthogonalityTable", mixinStandardHelpOptions = true,
        description = "Measures plain and AOL Newton-Schulz against the exact polar factor on the Muon updates of "
                + "the examples' models, a few steps into training.")
public final class OrthogonalityTable implements Callable<Integer> {
    @Option(names = "--models", split = ",", defaultValue = "mlp,cnn,tinygpt",
            description = "models to train, of mlp, cnn and tinygpt (default: ${DEFAULT-VALUE})")
    List<String> models;

    @Option(names = "--at", split = ",", defaultValue = "1,10,50",
            description = "the steps after which every Muon input is measured (default: ${DEFAULT-VALUE})")
    List<Integer> at;

    @Option(names = "--threads", defaultValue = "2",
            description = "libtorch threads, pinned (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--data", paramLabel = "DIR", description = "folder of the four Fashion-MNIST IDX files "
            + "(default: Debian's dataset-fashion-mnist, else generated data)")
    Path data;

    @Option(names = "--text", paramLabel = "PATH", description = "TinyGpt's text, a file or folder (default: "
            + "Debian's fortunes, else an embedded text)")
    Path text;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * One measured matrix.
     *
     * @param model       {@code mlp}, {@code cnn} or {@code tinygpt}
     * @param parameter   the parameter's name
     * @param rows        the matrix's rows
     * @param cols        its columns (a conv filter's {@code in·kh·kw})
     * @param step        the step after which it was taken
     * @param updateCheck the parameter's applied update against the optimizer's Newton–Schulz of the rebuilt
     *                    {@code U}, relative Frobenius distance
     * @param matrix      the spectrum and the results of every setting
     */
    record Row(String model, String parameter, long rows, long cols, int step, double updateCheck,
               PolarDistances.Matrix matrix) {
    }

    /**
     * Trains, measures and prints the tables; exits with 0, 1 for a data error, 2 for a usage error.
     *
     * @param args options, see {@code --help}
     */
    public static void main(String[] args) {
        ExampleCli.main(new OrthogonalityTable(), args);
    }

    @Override
    public Integer call() {
        for (String m : models) {
            check(List.of("mlp", "cnn", "tinygpt").contains(m), "--models takes mlp, cnn and tinygpt, got " + m);
        }
        for (int s : at) {
            check(s >= 1, "--at steps must be >= 1, got " + s);
        }
        check(threads >= 1, "--threads must be >= 1, got " + threads);
        torch.set_num_threads(threads);
        SortedSet<Integer> steps = new TreeSet<>(at);
        long started = System.nanoTime();
        System.out.println("OrthogonalityTable: Newton-Schulz against the exact polar factor on Muon inputs U");
        System.out.printf(Locale.ROOT, "models %s, measured after steps %s, libtorch threads %d%n", models, steps,
                torch.get_num_threads());
        List<Row> rows = new ArrayList<>();
        PolarDistances distances = new PolarDistances();
        try (PointerScope scope = new PointerScope()) {
            if (models.contains("mlp") || models.contains("cnn")) {
                FashionMnistData all = FashionMnistData.locate(Optional.ofNullable(data),
                        Path.of(FashionMnistData.DEBIAN_DIR), fashionDefaults().seed);
                System.out.println("Fashion-MNIST data: " + all.source());
                for (String m : List.of("mlp", "cnn")) {
                    if (models.contains(m)) {
                        rows.addAll(fashion(m, all, steps, distances));
                    }
                }
            }
            if (models.contains("tinygpt")) {
                CharCorpus corpus = CharCorpus.load(text);
                System.out.println("TinyGpt text: " + corpus.source());
                rows.addAll(tinyGpt(corpus, TinyGpt.Settings.parse(), steps, distances));
            }
        }
        System.out.println();
        System.out.print(report(rows, models, steps));
        System.out.printf(Locale.ROOT, "total %.0f s%n", (System.nanoTime() - started) / 1e9);
        return 0;
    }

    private void check(boolean ok, String message) {
        if (!ok) {
            throw new CommandLine.ParameterException(spec.commandLine(), message);
        }
    }

    /** FashionMnist's own defaults (lr, weight decay, seed, batch), read from its options. */
    static FashionMnist fashionDefaults() {
        FashionMnist defaults = new FashionMnist();
        ExampleCli.commandLine(defaults).parseArgs();
        return defaults;
    }

    /**
     * Trains a Fashion-MNIST model as {@code FashionMnist.trainWithMuonAdamW} does, up to the last of
     * {@code steps}, measuring after each of them.
     *
     * @param model     {@code mlp} or {@code cnn}
     * @param data      the images
     * @param steps     the steps after which to measure
     * @param distances the measurement
     * @return one row per Muon matrix and step
     */
    static List<Row> fashion(String model, FashionMnistData data, SortedSet<Integer> steps,
                             PolarDistances distances) {
        FashionMnist d = fashionDefaults();
        FashionMnist.Run run = new FashionMnist.Run(model, d.seed, d.lr, d.weightDecay, 1, d.batch);
        Supplier<Module> newModel = model.equals("mlp") ? FashionMlp::new : FashionCnn::new;
        List<Row> rows = new ArrayList<>();
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(run.seed());
            Module net = newModel.get();
            StringTensorDict named = net.named_parameters();
            MuonAdamW optimizer = AssignmentLog.quietly(
                    () -> MuonAdamW.dropIn(named, FashionMnist.adamWOptions(run)));
            Recorder recorder = new Recorder(model, optimizer, named, steps, distances, rows);
            Tensor images = data.trainImages();
            Tensor labels = data.trainLabels();
            long n = images.size(0);
            int perEpoch = (int) (n / run.batch());
            // The batch order of FashionMnist's runs: the seed plus one, a new permutation every epoch.
            torch.manual_seed(run.seed() + 1);
            Tensor order = null;
            for (int s = 0; s < steps.last(); s++) {
                if (s % perEpoch == 0) {
                    order = torch.randperm(n);
                }
                try (PointerScope stepScope = new PointerScope()) {
                    Tensor idx = order.narrow(0, (long) (s % perEpoch) * run.batch(), run.batch());
                    optimizer.zeroGrad();
                    Tensor loss = torch.cross_entropy_loss(((ImageClassifier) net).forward(
                            images.index_select(0, idx)), labels.index_select(0, idx));
                    loss.backward();
                    recorder.step();
                }
            }
            optimizer.close();
        }
        return rows;
    }

    /**
     * Trains TinyGpt's transformer as {@link TinyGpt}'s MuonAdamW run does, up to the last of {@code steps},
     * measuring after each of them.
     *
     * @param corpus    the text
     * @param s         TinyGpt's settings (its defaults for the table)
     * @param steps     the steps after which to measure
     * @param distances the measurement
     * @return one row per Muon matrix and step
     */
    static List<Row> tinyGpt(CharCorpus corpus, TinyGpt.Settings s, SortedSet<Integer> steps,
                             PolarDistances distances) {
        List<Row> rows = new ArrayList<>();
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(s.seed());
            CharTransformer model = new CharTransformer(corpus.vocabularySize(), s.context(), s.width(), s.layers(),
                    s.heads());
            StringTensorDict named = model.named_parameters();
            AdamWOptions options = new AdamWOptions(s.lr());
            options.weight_decay().put(s.weightDecay());
            MuonAdamW optimizer = AssignmentLog.quietly(() -> MuonAdamW.dropIn(named, options));
            Recorder recorder = new Recorder("tinygpt", optimizer, named, steps, distances, rows);
            TinyGpt.Stepper stepper = new TinyGpt.Stepper(optimizer::zeroGrad, recorder::step);
            Random batches = new Random(s.seed());
            for (int step = 1; step <= steps.last(); step++) {
                TinyGpt.step(model, stepper, corpus.batch(batches, false, s.batch(), s.context()), s.context());
            }
            optimizer.close();
        }
        return rows;
    }

    /**
     * Steps a {@link MuonAdamW} and, after the chosen steps, measures the Newton–Schulz input of every Muon matrix
     * that has a gradient.
     */
    private static final class Recorder {
        private final String model;
        private final MuonAdamW optimizer;
        private final StringTensorDict named;
        private final SortedSet<Integer> steps;
        private final PolarDistances distances;
        private final List<Row> rows;
        private final NewtonSchulz optimizersIteration;
        private int step;

        Recorder(String model, MuonAdamW optimizer, StringTensorDict named, SortedSet<Integer> steps,
                 PolarDistances distances, List<Row> rows) {
            this.model = model;
            this.optimizer = optimizer;
            this.named = named;
            this.steps = steps;
            this.distances = distances;
            this.rows = rows;
            this.optimizersIteration = new NewtonSchulz(PolarDistances.of(optimizer.muonConfig()));
        }

        /** One optimizer step; after a chosen one, the measurements. */
        void step() {
            step++;
            if (!steps.contains(step)) {
                optimizer.step();
                return;
            }
            List<String> names = optimizer.assignment().names(OptimizerKind.MUON);
            Map<String, Tensor> before = new HashMap<>();
            for (String name : names) {
                before.put(name, named.get(name).detach().clone());
            }
            optimizer.step();
            for (String name : names) {
                Tensor grad = named.get(name).grad();
                Optional<MuonState> state = optimizer.muonState(name);
                if (grad.defined() && state.isPresent()) {
                    try (PointerScope scope = new PointerScope()) {
                        measure(name, grad, state.get(), before.get(name));
                    }
                }
            }
            System.out.printf(Locale.ROOT, "%s: measured %d Muon matrices after step %d%n", model, names.size(),
                    step);
        }

        private void measure(String name, Tensor grad, MuonState state, Tensor before) {
            MuonConfig c = optimizer.muonConfig();
            Tensor momentum = state.momentum();
            Tensor u = c.nesterov() ? grad.lerp(momentum, new Scalar(c.momentum())) : momentum;
            Tensor matrix = u.reshape(u.size(0), -1).to(torch.ScalarType.Float).contiguous();
            // p = p·(1 − lr·wd) − scaledLr·O, so O = (p_before·(1 − lr·wd) − p_after) / scaledLr.
            Tensor after = named.get(name).detach();
            Tensor applied = before.mul(new Scalar(1 - c.lr() * c.weightDecay())).sub(after)
                    .div(new Scalar(state.lastScaledLr())).reshape(matrix.size(0), -1);
            Tensor expected = optimizersIteration.orthogonalize(matrix).to(torch.ScalarType.Float).clone();
            double updateCheck = torch.linalg_vector_norm(applied.sub(expected)).item_double()
                    / torch.linalg_vector_norm(expected).item_double();
            rows.add(new Row(model, name, matrix.size(0), matrix.size(1), step, updateCheck,
                    distances.measure(matrix)));
        }
    }

    /**
     * The per-matrix table, the summary per model and over all matrices, and the median distance by step.
     *
     * @param rows   the measured matrices
     * @param models the models, in the order to print them
     * @param steps  the measured steps
     * @return Markdown tables
     */
    static String report(List<Row> rows, List<String> models, SortedSet<Integer> steps) {
        StringBuilder out = new StringBuilder();
        out.append("Per matrix: shape, rank, sigma_1/|U|_F, sigma_rank/sigma_1 of U, the update check, and each"
                + " setting's |O - UV^T|_F / |UV^T|_F\n\n");
        out.append("| model | parameter | shape | step | rank | s1/|U|_F | s_r/s1 | update check |");
        PolarDistances.SETTINGS.forEach(s -> out.append(' ').append(s.label()).append(" |"));
        out.append('\n').append("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
                .append(" ---: |".repeat(PolarDistances.SETTINGS.size())).append('\n');
        for (Row r : rows) {
            PolarDistances.Matrix m = r.matrix();
            out.append(String.format(Locale.ROOT, "| %s | %s | %dx%d | %d | %d | %.3f | %.2e | %.1e |", r.model(),
                    r.parameter(), r.rows(), r.cols(), r.step(), m.rank(), m.spectralOverFrobenius(),
                    m.smallestOverLargest(), r.updateCheck()));
            m.results().forEach(x -> out.append(String.format(Locale.ROOT, " %.4f |", x.distance())));
            out.append('\n');
        }
        List<String> groups = new ArrayList<>(List.of("all"));
        groups.addAll(models);
        for (String group : groups) {
            List<Row> of = rows.stream().filter(r -> group.equals("all") || r.model().equals(group)).toList();
            out.append('\n').append(summary(group, of));
        }
        out.append("\nMedian distance over all matrices, by step\n\n| setting |");
        steps.forEach(s -> out.append(" step ").append(s).append(" |"));
        out.append("\n| --- |").append(" ---: |".repeat(steps.size())).append('\n');
        for (int i = 0; i < PolarDistances.SETTINGS.size(); i++) {
            out.append("| ").append(PolarDistances.SETTINGS.get(i).label()).append(" |");
            for (int step : steps) {
                double[] d = column(rows, r -> r.step() == step, i, PolarDistances.Result::distance);
                out.append(d.length == 0 ? " - |" : String.format(Locale.ROOT, " %.4f |", median(d)));
            }
            out.append('\n');
        }
        return out.toString();
    }

    /** One group's summary: per setting, the distance's median and max, and O's singular values. */
    private static String summary(String group, List<Row> rows) {
        StringBuilder out = new StringBuilder();
        out.append(String.format(Locale.ROOT, "Summary, %s (%d matrices): distance to UV^T, and O's singular values"
                + " over U's rank (min of the minima, median of the minima, median of the medians, max of the"
                + " maxima, median share >= 0.5)%n%n", group, rows.size()));
        out.append("| setting | distance median | distance max | s_min min | s_min median | s median | s_max max"
                + " | share >= 0.5 |\n");
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (int i = 0; i < PolarDistances.SETTINGS.size(); i++) {
            if (rows.isEmpty()) {
                break;
            }
            double[] distance = column(rows, r -> true, i, PolarDistances.Result::distance);
            double[] min = column(rows, r -> true, i, PolarDistances.Result::sigmaMin);
            double[] mid = column(rows, r -> true, i, PolarDistances.Result::sigmaMedian);
            double[] max = column(rows, r -> true, i, PolarDistances.Result::sigmaMax);
            double[] share = column(rows, r -> true, i, PolarDistances.Result::shareAboveHalf);
            out.append(String.format(Locale.ROOT, "| %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.2f |%n",
                    PolarDistances.SETTINGS.get(i).label(), median(distance), distance[distance.length - 1],
                    min[0], median(min), median(mid), max[max.length - 1], median(share)));
        }
        return out.toString();
    }

    /** One setting's values over the rows that {@code which} accepts, sorted ascending. */
    private static double[] column(List<Row> rows, Predicate<Row> which, int setting,
                                   java.util.function.ToDoubleFunction<PolarDistances.Result> value) {
        double[] values = rows.stream().filter(which)
                .mapToDouble(r -> value.applyAsDouble(r.matrix().results().get(setting))).toArray();
        Arrays.sort(values);
        return values;
    }

    private static double median(double[] sorted) {
        return PolarDistances.median(sorted);
    }
}
