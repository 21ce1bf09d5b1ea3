package dev.muon.orthogonalize;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Arrays;
import java.util.Locale;

/**
 * The interleaved A/B that set {@link NewtonSchulz#BFLOAT16_ONE_PASS_MAX_ROWS}: the bfloat16 symmetric kernel with
 * each step in one native pass against the half products with {@code B·X} on libtorch's GEMM (what ran before), call
 * by call in one process, so that both see the same neighbours; per shape, the median of each side's
 * normalise-and-iterate time over the repetitions and the median of the per-repetition ratios. Needs the AVX-512
 * native variant.
 *
 * <p>How to run (after {@code mvn -B -o -pl muon-core -am test-compile}), from the repository root:
 * {@code OMP_WAIT_POLICY=PASSIVE java -cp muon-core/target/classes:muon-core/target/test-classes:$(cat cp.txt)
 * dev.muon.orthogonalize.OnePassStepProbe 512,768,1024 15} with {@code cp.txt} from
 * {@code mvn -B -o -q -pl muon-core dependency:build-classpath -Dmdep.outputFile=cp.txt}; arguments: the square sides
 * (or {@code MxN}), the repetitions (each 3 calls per side), and optionally the thread count.
 */
public final class OnePassStepProbe {
    /** The process's CPU time, every thread's (libgomp's included): what a call costs whatever the neighbours do. */
    private static final com.sun.management.OperatingSystemMXBean PROCESS = (com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean();

    private OnePassStepProbe() {
    }

    /**
     * Runs the A/B.
     *
     * @param args shapes, repetitions, [threads]
     */
    public static void main(String[] args) {
        if (NativeKernels.variantUnavailabilityCause(NativeKernels.Variant.AVX512) != null) {
            throw new IllegalStateException("the AVX-512 native variant cannot run here: "
                    + NativeKernels.variantUnavailabilityCause(NativeKernels.Variant.AVX512).getMessage());
        }
        String[] shapes = (args.length > 0 ? args[0] : "512,768,1024,1280,1536").split(",");
        int repetitions = args.length > 1 ? Integer.parseInt(args[1]) : 11;
        if (args.length > 2) {
            torch.set_num_threads(Integer.parseInt(args[2]));
        }
        System.out.println("# threads " + torch.get_num_threads() + ", OMP_WAIT_POLICY="
                + System.getenv("OMP_WAIT_POLICY") + ", 5 steps, ms per normalise + iterate (median of " + repetitions
                + " repetitions, 3 calls each)");
        for (String shape : shapes) {
            String[] sides = shape.contains("x") ? shape.split("x") : new String[]{shape, shape};
            int m = Integer.parseInt(sides[0]);
            int n = Integer.parseInt(sides[1]);
            try (PointerScope scope = new PointerScope()) {
                run(m, n, repetitions);
            }
        }
    }

    private static void run(int m, int n, int repetitions) {
        torch.manual_seed(m);
        NewtonSchulzConfig config = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16)
                .withNsAlgorithm(NsAlgorithm.SYMMETRIC);
        NewtonSchulz ns = new NewtonSchulz(config);
        Tensor input = torch.randn(m, n);
        Scalar[][] abc = NewtonSchulzPropertiesTest.coefficientScalars(config, config.nsSteps());
        Workspace[] ws = new Workspace[2];
        SymmetricIteration[] kernels = new SymmetricIteration[2];
        for (int i = 0; i < 2; i++) {
            ws[i] = new Workspace(0, m, n, ScalarType.BFloat16, input.device());
            kernels[i] = new SymmetricIteration(ws[i], NativeKernels.Variant.AVX512, i == 1,
                    MatrixProducts.LIBTORCH);
        }
        double[][] times = new double[2][repetitions];
        double[][] cpu = new double[2][repetitions];
        double[] ratios = new double[repetitions];
        for (int warm = 0; warm < 2; warm++) {
            for (int i = 0; i < 2; i++) {
                call(ns, input, ws[i], kernels[i], config, abc);
            }
        }
        for (int r = 0; r < repetitions; r++) {
            // Alternate which side goes first, so that neither always follows the other.
            for (int j = 0; j < 2; j++) {
                int i = (r + j) % 2;
                long c0 = PROCESS.getProcessCpuTime();
                long t0 = System.nanoTime();
                for (int c = 0; c < 3; c++) {
                    call(ns, input, ws[i], kernels[i], config, abc);
                }
                times[i][r] = (System.nanoTime() - t0) / 3e6;
                cpu[i][r] = (PROCESS.getProcessCpuTime() - c0) / 3e6;
            }
            ratios[r] = times[1][r] / times[0][r];
        }
        Tensor before = call(ns, input, ws[0], kernels[0], config, abc).to(ScalarType.Float);
        Tensor after = call(ns, input, ws[1], kernels[1], config, abc).to(ScalarType.Float);
        double apart = before.sub(after).norm().item_double() / before.norm().item_double();
        System.out.println(String.format(Locale.ROOT, "%dx%d: half products + GEMM %.2f ms (fastest %.2f), one pass "
                + "%.2f ms (fastest %.2f), one pass / before %.3f (median of per-repetition ratios; min %.3f, max "
                + "%.3f; fastest over fastest %.3f); process CPU ms per call %.2f and %.2f (%.3f); results apart "
                + "%.1e", m, n, median(times[0]), min(times[0]), median(times[1]), min(times[1]), median(ratios),
                min(ratios), Arrays.stream(ratios).max().orElse(0), min(times[1]) / min(times[0]), median(cpu[0]),
                median(cpu[1]), median(cpu[1]) / median(cpu[0]), apart));
    }

    private static Tensor call(NewtonSchulz ns, Tensor input, Workspace ws, SymmetricIteration kernel,
                               NewtonSchulzConfig config, Scalar[][] abc) {
        ns.normalizeInto(ws.x, input);
        return kernel.iterate(config.nsSteps(), abc[0], abc[1], abc[2]);
    }

    private static double min(double[] values) {
        return Arrays.stream(values).min().orElse(Double.NaN);
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
