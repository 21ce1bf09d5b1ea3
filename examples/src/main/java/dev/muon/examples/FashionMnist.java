package dev.muon.examples;

import dev.muon.MuonAdamW;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Fashion-MNIST, AdamW against MuonAdamW: trains an MLP ({@link FashionMlp}) and a small CNN ({@link FashionCnn})
 * once with libtorch's {@code AdamW} and once with {@link MuonAdamW#dropIn} built from the same
 * {@code AdamWOptions}, from the same initial weights and on the same batches. The two training methods,
 * {@link #trainWithAdamW} and {@link #trainWithMuonAdamW}, differ only by the line that creates the optimizer.
 *
 * <p>Data: {@code --data DIR}, else Debian's {@code dataset-fashion-mnist} ({@value FashionMnistData#DEBIAN_DIR}),
 * else a generated stand-in, announced as such. Output: a progress bar per epoch, a final table (test accuracy,
 * final training loss, wall time, optimizer state bytes), and under {@code --out} (default
 * {@code target/fashion-mnist}) {@code losses.csv}, {@code summary.csv} and one {@code loss-<model>.png} per model.
 *
 * <p>Run from the repository root (defaults: 2 epochs on the first 10,000 training images, both models):
 * <pre>
 * mvn -B -q -Ptrain -DskipTests package
 * mvn -B -q -Ptrain -DskipTests package \
 *     -Dexample.args="--epochs 3 --train-size 0"
 * </pre>
 * Flags: {@code --data DIR}, {@code --out DIR}, {@code --epochs N}, {@code --train-size N} (0 = all 60,000),
 * {@code --batch N} (128), {@code --lr X} (1e-3), {@code --weight-decay X} (0.01, libtorch's AdamW default),
 * {@code --seed N} (42), {@code --models mlp,cnn}.
 */
public final class FashionMnist {
    private FashionMnist() {
    }

    /**
     * The command line.
     *
     * @param data        the {@code --data} directory, if given
     * @param out         where the CSV and PNG files go
     * @param epochs      epochs per run
     * @param trainSize   training images used, 0 for all
     * @param batch       the batch size
     * @param lr          the AdamW learning rate, which the drop-in also gives Muon
     * @param weightDecay the AdamW weight decay, which the drop-in also gives Muon
     * @param seed        the seed of the initial weights (and of the batch order, plus one)
     * @param models      which models to train: {@code mlp}, {@code cnn}
     */
    record Options(Optional<Path> data, Path out, int epochs, int trainSize, int batch, double lr,
                   double weightDecay, long seed, List<String> models) {
        static Options parse(String[] args) {
            // Maven's exec passes -Dexample.args as one argument: split it.
            List<String> words = new ArrayList<>();
            for (String arg : args) {
                for (String w : arg.trim().split("\\s+")) {
                    if (!w.isEmpty()) {
                        words.add(w);
                    }
                }
            }
            Optional<Path> data = Optional.empty();
            Path out = Path.of("target", "fashion-mnist");
            int epochs = 2;
            int trainSize = 10_000;
            int batch = 128;
            double lr = 1e-3;
            double weightDecay = 0.01;
            long seed = 42;
            List<String> models = List.of("mlp", "cnn");
            for (int i = 0; i < words.size(); i++) {
                String flag = words.get(i);
                if (i + 1 >= words.size()) {
                    throw new IllegalArgumentException("flag " + flag + " needs a value");
                }
                String value = words.get(++i);
                switch (flag) {
                    case "--data" -> data = Optional.of(Path.of(value));
                    case "--out" -> out = Path.of(value);
                    case "--epochs" -> epochs = Integer.parseInt(value);
                    case "--train-size" -> trainSize = Integer.parseInt(value);
                    case "--batch" -> batch = Integer.parseInt(value);
                    case "--lr" -> lr = Double.parseDouble(value);
                    case "--weight-decay" -> weightDecay = Double.parseDouble(value);
                    case "--seed" -> seed = Long.parseLong(value);
                    case "--models" -> models = Arrays.asList(value.toLowerCase(Locale.ROOT).split(","));
                    default -> throw new IllegalArgumentException("unknown flag " + flag + "; known: --data, --out,"
                            + " --epochs, --train-size, --batch, --lr, --weight-decay, --seed, --models");
                }
            }
            if (epochs < 1 || batch < 1) {
                throw new IllegalArgumentException("--epochs and --batch must be >= 1, got " + epochs + " and "
                        + batch);
            }
            for (String m : models) {
                if (!m.equals("mlp") && !m.equals("cnn")) {
                    throw new IllegalArgumentException("--models takes mlp and/or cnn, got " + m);
                }
            }
            return new Options(data, out, epochs, trainSize, batch, lr, weightDecay, seed, models);
        }
    }

    /**
     * One training run's numbers.
     *
     * @param model      the model's name
     * @param optimizer  the optimizer's name
     * @param accuracy   test accuracy, 0 to 1
     * @param testLoss   mean test cross-entropy
     * @param finalLoss  mean training loss over the last epoch
     * @param seconds    wall time of the training loop (evaluation excluded)
     * @param stateBytes the optimizer's state, in bytes
     */
    record Result(String model, String optimizer, double accuracy, double testLoss, double finalLoss, double seconds,
                  long stateBytes) {
    }

    /**
     * Runs the comparison.
     *
     * @param args flags, see the class comment
     */
    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true");
        Options options = Options.parse(args);
        try (PointerScope scope = new PointerScope()) {
            FashionMnistData data = FashionMnistData.locate(options.data(), Path.of(FashionMnistData.DEBIAN_DIR),
                    options.seed()).withTrainSize(options.trainSize());
            System.out.println("Data: " + data.source());
            System.out.println(String.format(Locale.ROOT, "Seed %d, %d epoch(s), batch %d, AdamW lr %g, weight decay"
                            + " %g (MuonAdamW.dropIn gets the same options)", options.seed(), options.epochs(),
                    options.batch(), options.lr(), options.weightDecay()));
            Files.createDirectories(options.out());
            Path csv = options.out().resolve("losses.csv");
            Files.deleteIfExists(csv);
            List<Result> results = new ArrayList<>();
            for (String name : options.models()) {
                Supplier<Module> model = name.equals("mlp") ? FashionMlp::new : FashionCnn::new;
                String title = name.equals("mlp") ? "MLP 784-256-256-10" : "CNN conv16-conv32-128-10";
                int steps = (int) (data.trainImages().size(0) / options.batch());
                LossCurves curves = new LossCurves(name, steps);
                results.add(trainWithAdamW(name, model, data, options, curves.run("AdamW")));
                results.add(trainWithMuonAdamW(name, model, data, options, curves.run("MuonAdamW")));
                curves.appendCsv(csv);
                Path png = options.out().resolve("loss-" + name + ".png");
                curves.writePng(png, "Fashion-MNIST, " + title + (data.generated() ? " (GENERATED data)" : ""));
                System.out.println("wrote " + png);
            }
            Path summary = options.out().resolve("summary.csv");
            Files.writeString(summary, table(results, true), StandardCharsets.UTF_8);
            System.out.println();
            System.out.print(table(results, false));
            System.out.println("wrote " + csv + " and " + summary);
            if (data.generated()) {
                System.out.println("NOTE: these numbers come from GENERATED data, not Fashion-MNIST.");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** libtorch's AdamW options: the one set of hyperparameters both runs use. */
    static AdamWOptions adamWOptions(Options o) {
        AdamWOptions options = new AdamWOptions(o.lr());
        options.weight_decay().put(o.weightDecay());
        return options;
    }

    /**
     * The baseline: libtorch's AdamW on every parameter.
     */
    static Result trainWithAdamW(String name, Supplier<Module> newModel, FashionMnistData data, Options o,
                                 List<Double> losses) {
        torch.manual_seed(o.seed());
        Module model = newModel.get();
        AdamW optimizer = new AdamW(model.parameters(), adamWOptions(o));
        return train(name, optimizer.getClass().getSimpleName(), model, data, o, losses, optimizer::zero_grad,
                optimizer::step, stateBytes(optimizer, model));
    }

    /**
     * The same run with the one-line swap: Muon for the hidden matrices and conv filters, AdamW for the rest.
     */
    static Result trainWithMuonAdamW(String name, Supplier<Module> newModel, FashionMnistData data, Options o,
                                     List<Double> losses) {
        torch.manual_seed(o.seed());
        Module model = newModel.get();
        MuonAdamW optimizer = MuonAdamW.dropIn(model.named_parameters(), adamWOptions(o));
        return train(name, optimizer.getClass().getSimpleName(), model, data, o, losses, optimizer::zero_grad,
                optimizer::step, stateBytes(optimizer, model));
    }

    /** AdamW keeps two moments per parameter, each of the parameter's size and dtype. */
    private static long stateBytes(AdamW optimizer, Module model) {
        return 2 * parameterBytes(model.parameters());
    }

    /** One momentum buffer per Muon matrix, two moments per AdamW parameter, as the assignment counts them. */
    private static long stateBytes(MuonAdamW optimizer, Module model) {
        return optimizer.assignment().stateBytes();
    }

    private static long parameterBytes(TensorVector parameters) {
        long bytes = 0;
        for (long i = 0; i < parameters.size(); i++) {
            Tensor p = parameters.get(i);
            bytes += p.numel() * p.element_size();
        }
        return bytes;
    }

    private static Result train(String modelName, String optimizerName, Module model, FashionMnistData data,
                                Options o, List<Double> losses, Runnable zeroGrad, Runnable step, long stateBytes) {
        ImageClassifier net = (ImageClassifier) model;
        Tensor images = data.trainImages();
        Tensor labels = data.trainLabels();
        long n = images.size(0);
        int steps = (int) (n / o.batch());
        // The same batch order for both optimizers.
        torch.manual_seed(o.seed() + 1);
        double lastEpochLoss = Double.NaN;
        long start = System.nanoTime();
        for (int epoch = 1; epoch <= o.epochs(); epoch++) {
            ProgressBar bar = new ProgressBar(System.out, String.format(Locale.ROOT, "%s %-9s %d/%d", modelName,
                    optimizerName, epoch, o.epochs()), steps, o.batch());
            try (PointerScope epochScope = new PointerScope()) {
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
                        bar.step(value);
                    }
                }
            }
            bar.finish();
            lastEpochLoss = bar.meanLoss();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double[] test = evaluate(net, data.testImages(), data.testLabels());
        return new Result(modelName, optimizerName, test[0], test[1], lastEpochLoss, seconds, stateBytes);
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

    private static String table(List<Result> results, boolean csv) {
        StringBuilder out = new StringBuilder();
        String format = csv ? "%s,%s,%s,%s,%s,%s,%s%n" : "%-5s %-10s %14s %11s %10s %9s %20s%n";
        out.append(String.format(Locale.ROOT, format, "model", "optimizer", "test accuracy", "final loss",
                "test loss", "seconds", "optimizer state B"));
        for (Result r : results) {
            out.append(String.format(Locale.ROOT, format, r.model(), r.optimizer(),
                    String.format(Locale.ROOT, csv ? "%.4f" : "%.2f%%", csv ? r.accuracy() : 100 * r.accuracy()),
                    String.format(Locale.ROOT, "%.4f", r.finalLoss()),
                    String.format(Locale.ROOT, "%.4f", r.testLoss()),
                    String.format(Locale.ROOT, "%.1f", r.seconds()),
                    String.format(Locale.ROOT, csv ? "%d" : "%,d", r.stateBytes())));
        }
        return out.toString();
    }
}
