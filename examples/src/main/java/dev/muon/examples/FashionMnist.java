package dev.muon.examples;

import dev.muon.MuonAdamW;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalDouble;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

/**
 * Fashion-MNIST, AdamW against MuonAdamW: trains an MLP ({@link FashionMlp}) and a small CNN ({@link FashionCnn})
 * with libtorch's {@code AdamW} and with {@link MuonAdamW#dropIn} built from the same {@code AdamWOptions}, from the
 * same initial weights and on the same batches, over several seeds and two learning rates (the base lr and a
 * multiple of it). The two training methods, {@link #trainWithAdamW} and {@link #trainWithMuonAdamW}, differ only by
 * the line that creates the optimizer.
 *
 * <p>Data: {@code --data DIR} (and only that folder, when given), else Debian's {@code dataset-fashion-mnist}
 * ({@value FashionMnistData#DEBIAN_DIR}), else a generated stand-in, announced as such. After every epoch it measures
 * test accuracy and loss, and the training seconds so far (evaluation excluded). Output in the run's folder
 * ({@link RunFolder}: a new {@code target/runs/fashion-mnist-<date>-<time>} or {@code --out}, printed as an absolute
 * path): {@code epochs.csv}, {@code steps.csv}, {@code summary.csv} and one {@code fashion-mnist-<model>.png} per
 * model ({@link ComparisonPlot}); {@code --docs DIR} also writes them where {@code docs/examples.md} shows them.
 *
 * <p>Run from the repository root; {@code --help} lists the options. The defaults are the README's main job (the
 * MLP, one seed, the base lr); the figures of {@code docs/examples.md} add seeds and the lr sweep:
 * <pre>
 * mvn -B -q -Ptrain -DskipTests package
 * mvn -B -q -Ptrain -DskipTests package -Dexample.args="--seeds 3 --lr-multipliers 1,3"
 * mvn -B -q -Ptrain -DskipTests package -Dexample.args="--models cnn --epochs 2 --seeds 3 --lr-multipliers 1,3"
 * </pre>
 */
@Command(name = "FashionMnist", mixinStandardHelpOptions = true,
        description = "Trains Fashion-MNIST models with AdamW and with MuonAdamW.dropIn on the same options, over "
                + "seeds and learning rates, and writes CSVs and one figure per model.")
public final class FashionMnist implements Callable<Integer> {
    @Option(names = "--data", paramLabel = "DIR", description = "folder of the four IDX files (default: Debian's "
            + "dataset-fashion-mnist, else generated data)")
    Path data;

    @Option(names = "--out", paramLabel = "DIR", description = "the run's folder, new or empty (default: a new "
            + "target/runs/fashion-mnist-<date>-<time>)")
    Path out;

    @Option(names = "--docs", paramLabel = "DIR", description = "also write the figures and CSVs of this run into "
            + "the docs folder DIR under the names docs/examples.md shows (../docs from the examples module), "
            + "replacing the published ones")
    Path docs;

    @Option(names = "--epochs", defaultValue = "3", description = "epochs per run (default: ${DEFAULT-VALUE})")
    int epochs;

    @Option(names = "--train-size", defaultValue = "0",
            description = "training images used, 0 for all 60,000 (default: ${DEFAULT-VALUE})")
    int trainSize;

    @Option(names = "--batch", defaultValue = "512", description = "batch size (default: ${DEFAULT-VALUE})")
    int batch;

    @Option(names = "--lr", defaultValue = "1e-3",
            description = "base AdamW learning rate, which the drop-in also gives Muon (default: ${DEFAULT-VALUE})")
    double lr;

    @Option(names = "--lr-multipliers", split = ",", defaultValue = "1",
            description = "the lr sweep, as multiples of --lr (default: ${DEFAULT-VALUE})")
    List<Double> lrMultipliers;

    @Option(names = "--weight-decay", defaultValue = "0.01",
            description = "AdamW weight decay, which the drop-in also gives Muon (default: ${DEFAULT-VALUE})")
    double weightDecay;

    @Option(names = "--seed", defaultValue = "42", description = "first seed (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--seeds", defaultValue = "1",
            description = "seeds per configuration: --seed, --seed+1, ... (default: ${DEFAULT-VALUE})")
    int seeds;

    @Option(names = "--models", split = ",", defaultValue = "mlp",
            description = "models to train, of mlp and cnn (default: ${DEFAULT-VALUE})")
    List<String> models;

    @Option(names = "--threads", defaultValue = "2",
            description = "libtorch intra-op threads, pinned for every run (default: ${DEFAULT-VALUE})")
    int threads;

    /**
     * One run's settings: what {@link #trainWithAdamW} and {@link #trainWithMuonAdamW} need.
     *
     * @param model       the model's name
     * @param seed        the seed of the initial weights (and of the batch order, plus one)
     * @param lr          the AdamW learning rate
     * @param weightDecay the AdamW weight decay
     * @param epochs      epochs
     * @param batch       the batch size
     */
    record Run(String model, long seed, double lr, double weightDecay, int epochs, int batch) {
    }

    /**
     * One training run's results.
     *
     * @param model      the model's name
     * @param optimizer  the optimizer's name
     * @param lr         the AdamW learning rate
     * @param seed       the seed
     * @param epochs     per epoch: test accuracy, test loss, mean training loss, training seconds so far
     * @param steps      every step's training loss
     * @param stateBytes the optimizer's state, in bytes
     */
    record Result(String model, String optimizer, double lr, long seed, List<EpochPoint> epochs, List<Double> steps,
                  long stateBytes) {
        EpochPoint last() {
            return epochs.get(epochs.size() - 1);
        }
    }

    /**
     * The measurements after one epoch.
     *
     * @param epoch     1-based
     * @param seconds   training seconds since the run started, evaluations excluded
     * @param accuracy  test accuracy, 0 to 1
     * @param testLoss  mean test cross-entropy
     * @param trainLoss mean training loss over the epoch
     */
    record EpochPoint(int epoch, double seconds, double accuracy, double testLoss, double trainLoss) {
    }

    /**
     * Parses the command line and runs the comparison; exits with 0, 1 for a data or output error, 2 for a usage
     * error (one line on stderr each).
     *
     * @param args options, see {@code --help}
     */
    public static void main(String[] args) {
        ExampleCli.main(new FashionMnist(), args);
    }

    /** The parser, with bad values reported as one-line usage errors that name the option. */
    static CommandLine commandLine() {
        return ExampleCli.commandLine(new FashionMnist());
    }

    /** Checks the options; picocli prints the message and the usage for a {@code ParameterException}. */
    void validate(CommandLine.Model.CommandSpec spec) {
        check(spec, epochs >= 1, "--epochs must be >= 1, got " + epochs);
        check(spec, batch >= 1, "--batch must be >= 1, got " + batch);
        check(spec, seeds >= 1, "--seeds must be >= 1, got " + seeds);
        check(spec, threads >= 1, "--threads must be >= 1, got " + threads);
        check(spec, trainSize >= 0, "--train-size must be >= 0, got " + trainSize);
        check(spec, lr > 0, "--lr must be > 0, got " + lr);
        check(spec, weightDecay >= 0, "--weight-decay must be >= 0, got " + weightDecay);
        for (double m : lrMultipliers) {
            check(spec, m > 0, "--lr-multipliers must all be > 0, got " + m);
        }
        for (String m : models) {
            check(spec, m.equals("mlp") || m.equals("cnn"), "--models takes mlp and/or cnn, got " + m);
        }
        check(spec, docs == null || Files.isDirectory(docs), "--docs must be an existing folder, got " + docs);
    }

    private static void check(CommandLine.Model.CommandSpec spec, boolean ok, String message) {
        if (!ok) {
            throw new CommandLine.ParameterException(spec.commandLine(), message);
        }
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        validate(spec);
        System.setProperty("java.awt.headless", "true");
        Path runDir = RunFolder.create(spec.commandLine(), out, "fashion-mnist", LocalDateTime.now());
        // Pinned so that every run, and every machine that repeats the job, uses the same pool.
        torch.set_num_threads(threads);
        try (PointerScope scope = new PointerScope()) {
            FashionMnistData all = FashionMnistData.locate(java.util.Optional.ofNullable(data),
                    Path.of(FashionMnistData.DEBIAN_DIR), seed).withTrainSize(trainSize);
            System.out.println("Data: " + all.source());
            System.out.println("Run folder: " + runDir);
            // OpenBLAS (Muon's symmetric kernel) keeps its own pool, sized by this variable or else one per core.
            System.out.println(String.format(Locale.ROOT, "libtorch threads: %d (torch.get_num_threads() = %d); "
                    + "OMP_NUM_THREADS=%s, OPENBLAS_NUM_THREADS=%s, cores: %d", threads, torch.get_num_threads(),
                    System.getenv("OMP_NUM_THREADS"), System.getenv("OPENBLAS_NUM_THREADS"),
                    Runtime.getRuntime().availableProcessors()));
            System.out.println(String.format(Locale.ROOT, "%d epoch(s), batch %d, %d seed(s) from %d, AdamW lr %g x %s,"
                            + " weight decay %g (MuonAdamW.dropIn gets the same options)", epochs, batch, seeds, seed,
                    lr, lrMultipliers, weightDecay));
            List<Result> results = new ArrayList<>();
            List<Path> written = new ArrayList<>();
            long started = System.nanoTime();
            OptionalDouble loadAtStart = MachineLoad.now();
            for (String name : models) {
                Supplier<Module> model = name.equals("mlp") ? FashionMlp::new : FashionCnn::new;
                List<Result> ofModel = new ArrayList<>();
                for (double multiplier : lrMultipliers) {
                    for (int s = 0; s < seeds; s++) {
                        Run run = new Run(name, seed + s, lr * multiplier, weightDecay, epochs, batch);
                        ofModel.add(trainWithAdamW(model, all, run));
                        // The assignment table is the same for every run of a model: logged by the first only.
                        boolean first = ofModel.size() == 1;
                        ofModel.add(first ? trainWithMuonAdamW(model, all, run)
                                : AssignmentLog.quietly(() -> trainWithMuonAdamW(model, all, run)));
                    }
                }
                results.addAll(ofModel);
                String load = MachineLoad.note(loadAtStart, MachineLoad.now());
                written.add(figure(runDir.resolve("fashion-mnist-" + name + ".png"), name, all, ofModel, load));
                if (docs != null) {
                    written.addAll(publish(docs.toAbsolutePath().normalize(), name, all, ofModel, load));
                }
            }
            Path epochsCsv = runDir.resolve("epochs.csv");
            Path stepsCsv = runDir.resolve("steps.csv");
            Path summaryCsv = runDir.resolve("summary.csv");
            List<RunTables.Summary> summary = RunTables.summarise(results, lr);
            write(epochsCsv, p -> RunTables.writeEpochs(p, results));
            write(stepsCsv, p -> RunTables.writeSteps(p, results));
            write(summaryCsv, p -> RunTables.writeSummary(p, summary));
            written.addAll(List.of(epochsCsv, stepsCsv, summaryCsv));
            System.out.println();
            System.out.print(RunTables.table(summary));
            System.out.println(String.format(Locale.ROOT, "total %.0f s", (System.nanoTime() - started) / 1e9));
            for (Path p : written) {
                System.out.println("wrote " + p);
            }
            if (all.generated()) {
                System.out.println("NOTE: these numbers come from GENERATED data, not Fashion-MNIST.");
            }
        }
        return 0;
    }

    /** One model's figure, titled with the model and the data. */
    private Path figure(Path png, String model, FashionMnistData all, List<Result> ofModel, String load) {
        String title = "Fashion-MNIST, " + modelTitle(model) + (all.generated() ? " (GENERATED data)" : "");
        write(png, p -> ComparisonPlot.write(p, title, ofModel, lr, all.trainImages().size(0) / batch, load));
        return png;
    }

    /**
     * The model as the figures name it.
     *
     * @param model {@code mlp} or {@code cnn}
     * @return its layers, such as {@code MLP 784-256-256-10}
     */
    static String modelTitle(String model) {
        return model.equals("mlp") ? "MLP 784-256-256-10" : "CNN conv16-conv32-128-10";
    }

    /** The docs' copies of one model's figure and CSVs, under the names docs/examples.md links to. */
    private List<Path> publish(Path docsDir, String model, FashionMnistData all, List<Result> ofModel,
                               String load) {
        Path data = docsDir.resolve("data");
        String prefix = "fashion-mnist-" + model;
        List<Path> files = List.of(docsDir.resolve(prefix + ".png"), data.resolve(prefix + "-epochs.csv"),
                data.resolve(prefix + "-steps.csv"), data.resolve(prefix + "-summary.csv"));
        figure(files.get(0), model, all, ofModel, load);
        write(files.get(1), p -> RunTables.writeEpochs(p, ofModel));
        write(files.get(2), p -> RunTables.writeSteps(p, ofModel));
        write(files.get(3), p -> RunTables.writeSummary(p, RunTables.summarise(ofModel, lr)));
        return files;
    }

    /** Something that writes a file. */
    private interface FileWriter {
        void write(Path file) throws IOException;
    }

    /** Writes a file; a failure is one line naming it. */
    private static void write(Path file, FileWriter writer) {
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            writer.write(file);
        } catch (IOException e) {
            throw new DataError(file + ": cannot write it (" + DataError.reason(e) + ")", e);
        }
    }

    /** libtorch's AdamW options: the one set of hyperparameters both runs use. */
    static AdamWOptions adamWOptions(Run o) {
        AdamWOptions options = new AdamWOptions(o.lr());
        options.weight_decay().put(o.weightDecay());
        return options;
    }

    /**
     * The baseline: libtorch's AdamW on every parameter.
     */
    static Result trainWithAdamW(Supplier<Module> newModel, FashionMnistData data, Run o) {
        torch.manual_seed(o.seed());
        Module model = newModel.get();
        AdamW optimizer = new AdamW(model.parameters(), adamWOptions(o));
        return train(o, "AdamW", model, data, optimizer::zero_grad, optimizer::step,
                2 * parameterBytes(model.parameters()));
    }

    /**
     * The same run with the one-line swap: Muon for the hidden matrices and conv filters, AdamW for the rest.
     */
    static Result trainWithMuonAdamW(Supplier<Module> newModel, FashionMnistData data, Run o) {
        torch.manual_seed(o.seed());
        Module model = newModel.get();
        MuonAdamW optimizer = MuonAdamW.dropIn(model.named_parameters(), adamWOptions(o));
        return train(o, "MuonAdamW", model, data, optimizer::zero_grad, optimizer::step,
                optimizer.assignment().stateBytes());
    }

    private static long parameterBytes(TensorVector parameters) {
        long bytes = 0;
        for (long i = 0; i < parameters.size(); i++) {
            Tensor p = parameters.get(i);
            bytes += p.numel() * p.element_size();
        }
        return bytes;
    }

    private static Result train(Run o, String optimizerName, Module model, FashionMnistData data, Runnable zeroGrad,
                                Runnable step, long stateBytes) {
        ImageClassifier net = (ImageClassifier) model;
        Tensor images = data.trainImages();
        Tensor labels = data.trainLabels();
        long n = images.size(0);
        int steps = (int) (n / o.batch());
        List<Double> losses = new ArrayList<>();
        List<EpochPoint> points = new ArrayList<>();
        // The same batch order for both optimizers.
        torch.manual_seed(o.seed() + 1);
        double trainingNanos = 0;
        String label = String.format(Locale.ROOT, "%s %-9s lr %.0e seed %d", o.model(), optimizerName, o.lr(),
                o.seed());
        for (int epoch = 1; epoch <= o.epochs(); epoch++) {
            double lossSum = 0;
            long start = System.nanoTime();
            try (PointerScope epochScope = new PointerScope(); ProgressBar bar = progressBar(label, epoch, o, steps)) {
                Tensor order = torch.randperm(n);
                for (int s = 0; s < steps; s++) {
                    try (PointerScope stepScope = new PointerScope()) {
                        Tensor idx = order.narrow(0, (long) s * o.batch(), o.batch());
                        zeroGrad.run();
                        Tensor loss = torch.cross_entropy_loss(net.forward(images.index_select(0, idx)),
                                labels.index_select(0, idx));
                        loss.backward();
                        step.run();
                        double value = loss.item_double();
                        losses.add(value);
                        lossSum += value;
                        if (bar != null) {
                            bar.step();
                        }
                    }
                }
            }
            trainingNanos += System.nanoTime() - start;
            double[] test = evaluate(net, data.testImages(), data.testLabels());
            EpochPoint point = new EpochPoint(epoch, trainingNanos / 1e9, test[0], test[1], lossSum / steps);
            points.add(point);
            System.out.println(String.format(Locale.ROOT, "%s  epoch %d/%d  train loss %.4f  test acc %.2f%%  %.1f s",
                    label, epoch, o.epochs(), point.trainLoss(), 100 * point.accuracy(), point.seconds()));
        }
        return new Result(o.model(), optimizerName, o.lr(), o.seed(), points, losses, stateBytes);
    }

    /**
     * A live bar on a terminal only: in a log (Maven's exec, CI) the per-epoch line above says the same and a
     * redrawn bar would only add noise.
     */
    private static ProgressBar progressBar(String label, int epoch, Run o, int steps) {
        if (System.console() == null) {
            return null;
        }
        return new ProgressBarBuilder().setTaskName(label + " " + epoch + "/" + o.epochs()).setInitialMax(steps)
                .setUnit(" steps", 1).showSpeed().build();
    }

    /** Test accuracy and mean test loss, in chunks so that the CNN's activations stay small. */
    private static double[] evaluate(ImageClassifier net, Tensor images, Tensor labels) {
        long n = images.size(0);
        double correct = 0;
        double lossSum = 0;
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            for (long first = 0; first < n; first += 1000) {
                try (PointerScope chunk = new PointerScope()) {
                    long len = Math.min(1000, n - first);
                    Tensor logits = net.forward(images.narrow(0, first, len));
                    Tensor y = labels.narrow(0, first, len);
                    lossSum += torch.cross_entropy_loss(logits, y).item_double() * len;
                    correct += torch.argmax(logits, new LongOptional(1), false).eq(y).sum().item_double();
                }
            }
        }
        return new double[] {correct / n, lossSum / n};
    }
}
