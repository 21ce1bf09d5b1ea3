package dev.muon.examples;

import dev.muon.MuonAdamW;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * The README's quick start on embedded data: trains a small MLP on a generated classification task twice, once with libtorch's
 * {@code AdamW} and once with {@link MuonAdamW} built by {@link MuonAdamW#dropIn} from the same AdamW options (Muon
 * for the hidden matrices, AdamW for the biases and the output head), and prints both runs side by side. The two
 * optimizer set-ups differ by one line.
 *
 * <p>The data is embedded (generated from a fixed seed): 8,192 points in 32 dimensions, labelled by a random
 * two-layer "teacher" network into 10 classes. Run with
 * {@code mvn -B -q -Ptrain -DskipTests package -Dexample.main=dev.muon.examples.QuickStart}, or
 * {@code java -cp ... dev.muon.examples.QuickStart [--epochs N]}.
 */
@Command(name = "QuickStart", mixinStandardHelpOptions = true,
        description = "AdamW against MuonAdamW.dropIn on a small MLP and generated data.")
public final class QuickStart implements Callable<Integer> {
    @Option(names = "--epochs", defaultValue = "8", description = "epochs (default: ${DEFAULT-VALUE})")
    int epochs;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private static final int FEATURES = 32;
    private static final int HIDDEN = 128;
    private static final int CLASSES = 10;
    private static final int TRAIN = 8192;
    private static final int TEST = 2048;
    private static final int BATCH = 128;
    private static final long SEED = 42;

    QuickStart() {
    }

    /** The student network: two hidden layers, whose weight matrices are what Muon is for. */
    static final class Mlp extends Module {
        final LinearImpl fc1;
        final LinearImpl fc2;
        final LinearImpl head;

        Mlp() {
            fc1 = register_module("fc1", new LinearImpl(FEATURES, HIDDEN));
            fc2 = register_module("fc2", new LinearImpl(HIDDEN, HIDDEN));
            head = register_module("head", new LinearImpl(HIDDEN, CLASSES));
        }

        Tensor forward(Tensor x) {
            return head.forward(fc2.forward(fc1.forward(x).relu()).relu());
        }
    }

    /** One optimizer set-up under test: how to step and clear gradients. */
    interface Stepper {
        void zeroGrad();

        void step();
    }

    /**
     * Runs the comparison.
     *
     * @param args {@code --epochs N} (default 8); see {@code --help}
     */
    public static void main(String[] args) {
        ExampleCli.main(new QuickStart(), args);
    }

    @Override
    public Integer call() {
        if (epochs < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--epochs must be >= 1, got " + epochs);
        }
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(SEED);
            Tensor teacherIn = torch.randn(FEATURES, 64);
            Tensor teacherOut = torch.randn(64, CLASSES);
            Tensor x = torch.randn(TRAIN + TEST, FEATURES);
            Tensor y = torch.argmax(x.matmul(teacherIn).tanh().matmul(teacherOut), new org.bytedeco.pytorch.LongOptional(1), false);
            Tensor trainX = x.narrow(0, 0, TRAIN);
            Tensor trainY = y.narrow(0, 0, TRAIN);
            Tensor testX = x.narrow(0, TRAIN, TEST);
            Tensor testY = y.narrow(0, TRAIN, TEST);

            System.out.println("Muon for the JVM: quick start (generated data, seed " + SEED + ", " + epochs
                    + " epochs, batch " + BATCH + ")");
            Result adamw = train("AdamW", epochs, trainX, trainY, testX, testY, model -> {
                AdamW opt = new AdamW(model.parameters(), adamwOptions(3e-3));
                return stepper(opt::zero_grad, opt::step);
            });
            Result muon = train("MuonAdamW", epochs, trainX, trainY, testX, testY, model -> {
                // The one changed line: the same options, Muon for fc1/fc2, AdamW for biases and the head.
                // Building it logs the assignment table (which parameter went where, and why).
                MuonAdamW opt = MuonAdamW.dropIn(model.named_parameters(), adamwOptions(3e-3));
                return stepper(opt::zero_grad, opt::step);
            });
            System.out.println();
            System.out.println(String.format(Locale.ROOT, "%-14s %12s %14s %10s", "optimizer", "final loss",
                    "test accuracy", "seconds"));
            for (Result r : List.of(adamw, muon)) {
                System.out.println(String.format(Locale.ROOT, "%-14s %12.4f %13.2f%% %10.1f", r.name, r.loss,
                        100 * r.accuracy, r.seconds));
            }
        }
        return 0;
    }

    private static AdamWOptions adamwOptions(double lr) {
        AdamWOptions options = new AdamWOptions(lr);
        options.weight_decay().put(0.01);
        return options;
    }

    private static Stepper stepper(Runnable zero, Runnable step) {
        return new Stepper() {
            @Override
            public void zeroGrad() {
                zero.run();
            }

            @Override
            public void step() {
                step.run();
            }
        };
    }

    record Result(String name, double loss, double accuracy, double seconds) {
    }

    private static Result train(String name, int epochs, Tensor trainX, Tensor trainY, Tensor testX, Tensor testY,
                                java.util.function.Function<Mlp, Stepper> optimizerFor) {
        torch.manual_seed(SEED + 1);
        Mlp model = new Mlp();
        Stepper optimizer = optimizerFor.apply(model);
        long start = System.nanoTime();
        double epochLoss = 0;
        for (int epoch = 1; epoch <= epochs; epoch++) {
            epochLoss = 0;
            int batches = 0;
            Tensor order = torch.randperm(TRAIN);
            for (int first = 0; first + BATCH <= TRAIN; first += BATCH) {
                try (PointerScope step = new PointerScope()) {
                    Tensor idx = order.narrow(0, first, BATCH);
                    optimizer.zeroGrad();
                    Tensor loss = torch.cross_entropy_loss(model.forward(trainX.index_select(0, idx)),
                            trainY.index_select(0, idx));
                    loss.backward();
                    optimizer.step();
                    epochLoss += loss.item_double();
                    batches++;
                }
            }
            epochLoss /= batches;
            System.out.println(String.format(Locale.ROOT, "%-14s epoch %2d  loss %.4f", name, epoch, epochLoss));
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double accuracy;
        try (PointerScope eval = new PointerScope(); org.bytedeco.pytorch.NoGradGuard noGrad =
                new org.bytedeco.pytorch.NoGradGuard()) {
            Tensor predicted = torch.argmax(model.forward(testX), new org.bytedeco.pytorch.LongOptional(1), false);
            accuracy = predicted.eq(testY).to(torch.ScalarType.Float).mean().item_double();
        }
        return new Result(name, epochLoss, accuracy, seconds);
    }
}
