package dev.muon.examples;

import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * How to benchmark Newton–Schulz on your own matrix shapes: prints the {@code muon-bench} (JMH) commands for the
 * shapes given, then takes a rough first look by timing {@link NewtonSchulz} on each shape in this JVM.
 *
 * <p>The rough look is a median of a few calls after one warm-up call, in a JVM that also loaded everything else:
 * good for "is this 5 ms or 500 ms", not for a number to report. {@code NewtonSchulzBenchmark} in
 * {@code muon-bench} does it properly: a forked JVM, warm-up iterations, error bars, and the GEMM floor
 * ({@code gemm}) next to our iteration, so you see how much of the time is the three matrix products per step.
 *
 * <p>Run with
 * <pre>{@code
 * mvn -B -q -Ptrain -DskipTests package -Dexample.main=dev.muon.examples.JmhQuickstart \
 *     -Dexample.args="768x3072 1024x1024"
 * }</pre>
 * or with {@code --print-only} first to print the commands and time nothing.
 */
@Command(name = "JmhQuickstart", mixinStandardHelpOptions = true,
        description = "Prints the muon-bench (JMH) commands for your shapes, then times Newton-Schulz on each roughly.")
public final class JmhQuickstart implements Callable<Integer> {
    private static final int CALLS = 5;

    @Parameters(paramLabel = "SHAPE", arity = "0..*", description = "ROWSxCOLS (default: 768x3072, a GPT-2-small "
            + "MLP matrix)")
    List<String> shapeTexts = new ArrayList<>();

    @Option(names = "--print-only", description = "print the commands and time nothing")
    boolean printOnly;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * Prints the JMH commands for the shapes, then times each shape roughly.
     *
     * @param args shapes as {@code ROWSxCOLS}, and {@code --print-only}; see {@code --help}
     */
    public static void main(String[] args) {
        ExampleCli.main(new JmhQuickstart(), args);
    }

    /** Picocli reports a bad shape as a usage error that names it. */
    @Override
    public Integer call() {
        List<long[]> shapes = new ArrayList<>();
        for (String token : shapeTexts.isEmpty() ? List.of("768x3072") : shapeTexts) {
            try {
                shapes.add(parseShape(token));
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage(), e);
            }
        }
        System.out.println(commands(shapes));
        if (printOnly) {
            return 0;
        }
        System.out.println("Rough look (median of " + CALLS + " calls in this JVM, float32, "
                + torch.get_num_threads() + " libtorch threads; not a benchmark):");
        NewtonSchulz newtonSchulz = new NewtonSchulz(NewtonSchulzConfig.defaults());
        for (long[] shape : shapes) {
            System.out.printf(Locale.ROOT, "  %-12s %10.2f ms%n", shape[0] + "x" + shape[1],
                    medianMillis(newtonSchulz, shape));
        }
        return 0;
    }

    /**
     * The commands that build the benchmark jar and run {@code NewtonSchulzBenchmark} on the shapes.
     *
     * @param shapes rows and columns of each shape
     * @return the commands, one per line, with a short explanation
     */
    static String commands(List<long[]> shapes) {
        StringBuilder joined = new StringBuilder();
        for (long[] shape : shapes) {
            joined.append(joined.length() == 0 ? "" : ",").append(shape[0]).append('x').append(shape[1]);
        }
        return String.join(System.lineSeparator(),
                "Benchmark Newton-Schulz on your shapes with muon-bench (JMH), from the repository root:",
                "  mvn -B -DskipTests package",
                "  OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java -jar muon-bench/target/benchmarks.jar"
                        + " NewtonSchulzBenchmark -p shape=" + joined
                        + " -p dtype=float32 -p variant=ns-auto,gemm -rf json -rff ns.json",
                "(the two variables keep OpenMP's and OpenBLAS's idle threads from spinning against each other;"
                        + " on a machine other jobs share, the numbers are not worth reporting)",
                "'ns-auto' is what Muon runs; 'gemm' is the floor, the same matrix products and nothing else.",
                "Add bfloat16 with -p dtype=float32,bfloat16; see docs/benchmarks.md for the variants and our numbers.",
                "");
    }

    /**
     * Parses {@code ROWSxCOLS}.
     *
     * @param text the shape
     * @return rows and columns
     * @throws IllegalArgumentException if it is not two positive integers joined by {@code x}
     */
    static long[] parseShape(String text) {
        String[] parts = text.toLowerCase(Locale.ROOT).split("x");
        try {
            if (parts.length == 2) {
                long rows = Long.parseLong(parts[0]);
                long cols = Long.parseLong(parts[1]);
                if (rows > 0 && cols > 0) {
                    return new long[] {rows, cols};
                }
            }
        } catch (NumberFormatException e) {
            // reported below with the rule
        }
        throw new IllegalArgumentException("a shape must be ROWSxCOLS with positive integers, e.g. 768x3072, got '"
                + text + "'");
    }

    private static double medianMillis(NewtonSchulz newtonSchulz, long[] shape) {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(0);
            Tensor input = torch.randn(shape[0], shape[1]);
            // The first call allocates the workspaces and is not timed.
            newtonSchulz.orthogonalize(input);
            double[] millis = new double[CALLS];
            for (int i = 0; i < CALLS; i++) {
                try (PointerScope call = new PointerScope()) {
                    long start = System.nanoTime();
                    newtonSchulz.orthogonalize(input);
                    millis[i] = (System.nanoTime() - start) / 1e6;
                }
            }
            Arrays.sort(millis);
            return millis[CALLS / 2];
        }
    }
}
