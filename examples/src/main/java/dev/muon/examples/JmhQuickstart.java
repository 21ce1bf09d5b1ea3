package dev.muon.examples;

import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

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
 * mvn -B -q -Ptrain -DskipTests package -pl examples -Dexample.main=dev.muon.examples.JmhQuickstart \
 *     -Dexample.args="768x3072 1024x1024"
 * }</pre>
 * or with {@code --print-only} first to print the commands and time nothing.
 */
public final class JmhQuickstart {
    private static final int CALLS = 5;

    private JmhQuickstart() {
    }

    /**
     * Prints the JMH commands for the shapes, then times each shape roughly.
     *
     * @param args shapes as {@code ROWSxCOLS} (default: {@code 768x3072}, a GPT-2-small MLP matrix), optionally
     *             preceded by {@code --print-only}
     * @throws IllegalArgumentException if a shape is not two positive integers joined by {@code x}
     */
    public static void main(String[] args) {
        // exec-maven-plugin passes -Dexample.args as one argument: split it again.
        List<String> tokens = new ArrayList<>(Arrays.asList(String.join(" ", args).trim().split("\\s+")));
        tokens.removeIf(String::isEmpty);
        boolean printOnly = tokens.remove("--print-only");
        List<long[]> shapes = new ArrayList<>();
        for (String token : tokens.isEmpty() ? List.of("768x3072") : tokens) {
            shapes.add(parseShape(token));
        }
        System.out.println(commands(shapes));
        if (printOnly) {
            return;
        }
        System.out.println("Rough look (median of " + CALLS + " calls in this JVM, float32, "
                + torch.get_num_threads() + " libtorch threads; not a benchmark):");
        NewtonSchulz newtonSchulz = new NewtonSchulz(NewtonSchulzConfig.defaults());
        for (long[] shape : shapes) {
            System.out.printf(Locale.ROOT, "  %-12s %10.2f ms%n", shape[0] + "x" + shape[1],
                    medianMillis(newtonSchulz, shape));
        }
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
                "  java -jar muon-bench/target/benchmarks.jar NewtonSchulzBenchmark -p shape=" + joined
                        + " -p dtype=float32 -p variant=ns-auto,gemm -rf json -rff ns.json",
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
