package dev.muon.bench;

import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.NsPreconditioning;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.util.concurrent.TimeUnit;

/**
 * How close is our Newton–Schulz to the floor set by its own GEMMs?
 *
 * <p>Variants: {@code ns-auto} is {@link NewtonSchulz} (5 steps, Keller Jordan's triple) with its default kernel
 * choice ({@link NsAlgorithm#AUTO}); {@code ns-gemm}, {@code ns-symmetric} and {@code ns-gram} force one kernel
 * (a kernel that does not apply, e.g. symmetric on a GPU, runs GEMMs); {@code gemm} runs the
 * same three products per step ({@code X·Xᵀ}, {@code A·A}, {@code B·X}) with {@code mm_out} into preallocated
 * tensors and nothing else, the floor of any GEMM-based implementation; {@code naive} is the textbook
 * form with out-of-place {@code matmul}, scalar multiplies and adds, as most ports write it;
 * {@code torch-reference} is {@code torch.optim.Muon}'s own {@code addmm} form, the PyTorch peer's function on this
 * libtorch (the same-libtorch baseline of {@code docs/benchmarks.md}). The ratio
 * {@code ns-gemm / gemm} is the overhead of everything that is not a GEMM; {@code ns-gemm / ns-symmetric} and
 * {@code ns-gemm / ns-gram} are what the faster kernels gain.
 *
 * <p>How to run: {@code OMP_WAIT_POLICY=PASSIVE java -jar muon-bench/target/benchmarks.jar NewtonSchulzBenchmark
 * -p shape=1024x4096} (your own shapes: {@code -p shape=1536x6144}; the set of issue #4 is the default and takes
 * about an hour) (after {@code mvn -B -DskipTests package}); add {@code -rf json -rff ns.json} to keep the
 * numbers. {@code OMP_WAIT_POLICY=PASSIVE} is what we recommend for CPU training (see docs/benchmarks.md); the
 * set-up prints the value in force.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class NewtonSchulzBenchmark {
    private static final double A = 3.4445;
    private static final double B = -4.7750;
    private static final double C = 2.0315;
    private static final int STEPS = 5;

    /** Rows x columns of the input (wide; tall inputs are transposed first and cost the same). */
    @Param({"512x512", "768x768", "768x3072", "3072x768", "1024x4096", "2048x2048", "4096x4096"})
    public String shape;

    /** The dtype of the iteration. */
    @Param({"float32", "bfloat16"})
    public String dtype;

    /** Which implementation runs. */
    @Param({"ns-auto", "ns-gemm", "ns-symmetric", "ns-gram", "gemm", "naive", "torch-reference"})
    public String variant;

    /**
     * The {@code ns-*} variants' iteration: {@code plain} (PyTorch's: Frobenius normalization, five steps of Keller
     * Jordan's triple), {@code plain-4} (the same, four steps) or {@code aol} (Turbo-Muon's: AOL preconditioning,
     * four steps of {@link CoefficientSchedule#turboMuon4()}).
     */
    @Param({"plain"})
    public String iteration = "plain";

    private PointerScope scope;
    private Tensor input;
    private NewtonSchulz newtonSchulz;
    private Tensor x;
    private Tensor a;
    private Tensor b;
    private Tensor y;
    private Scalar sa;
    private Scalar sb;
    private Scalar sc;

    /** Allocates the input, the workspaces and, for {@code muon}, runs one call to create its workspaces. */
    @Setup(Level.Trial)
    public void setUp() {
        // The settings first, so that a misspelt one is refused before anything is built, never taken for another.
        NsPrecision precision = NsDtype.precisionOf("dtype", dtype);
        NsAlgorithm algorithm = algorithmOf(variant);
        scope = new PointerScope();
        torch.manual_seed(0);
        String[] dims = shape.split("x");
        long rows = Long.parseLong(dims[0]);
        long cols = Long.parseLong(dims[1]);
        ScalarType type = precision == NsPrecision.BFLOAT16 ? ScalarType.BFloat16 : ScalarType.Float;
        input = torch.randn(rows, cols);
        NewtonSchulzConfig config = NewtonSchulzConfig.defaults()
                .withNsPrecision(precision)
                .withNsAlgorithm(algorithm);
        newtonSchulz = new NewtonSchulz(switch (iteration) {
            case "plain" -> config;
            case "plain-4" -> config.withNsSteps(4);
            case "aol" -> config.withNsCoefficients(CoefficientSchedule.turboMuon4())
                    .withNsPreconditioning(NsPreconditioning.AOL);
            default -> throw new IllegalArgumentException("iteration must be plain, plain-4 or aol, got "
                    + iteration);
        });
        long m = Math.min(rows, cols);
        long n = Math.max(rows, cols);
        x = torch.randn(m, n).div_(new Scalar(Math.sqrt((double) m * n))).to(type);
        y = torch.empty_like(x);
        a = torch.randn(m, m).to(type);
        b = torch.randn(m, m).to(type);
        sa = new Scalar(A);
        sb = new Scalar(B);
        sc = new Scalar(C);
        if (variant.startsWith("ns-")) {
            newtonSchulz.orthogonalize(input);
        }
        System.out.println("# libtorch intra-op threads: " + torch.get_num_threads() + ", OMP_WAIT_POLICY="
                + System.getenv("OMP_WAIT_POLICY") + ", " + CpuCapabilities.summary().replace('\n', ','));
    }

    /** Frees the native memory of this trial. */
    @TearDown(Level.Trial)
    public void tearDown() {
        scope.close();
    }

    /**
     * One orthogonalization (five steps) with the selected variant.
     *
     * @param bh keeps the result alive
     */
    @Benchmark
    public void orthogonalize(Blackhole bh) {
        try (PointerScope call = new PointerScope()) {
            switch (variant) {
                case "ns-auto", "ns-gemm", "ns-symmetric", "ns-gram" -> bh.consume(newtonSchulz.orthogonalize(input));
                case "gemm" -> bh.consume(gemmsOnly());
                case "naive" -> bh.consume(naive());
                case "torch-reference" -> bh.consume(torchReference());
                default -> throw new IllegalStateException("unknown variant " + variant);
            }
        }
    }

    private static NsAlgorithm algorithmOf(String variant) {
        return switch (variant) {
            case "ns-gemm" -> NsAlgorithm.GEMM;
            case "ns-symmetric" -> NsAlgorithm.SYMMETRIC;
            case "ns-gram" -> NsAlgorithm.GRAM;
            // The variants that do not run NewtonSchulz build it at its default all the same.
            case "ns-auto", "gemm", "naive", "torch-reference" -> NsAlgorithm.AUTO;
            default -> throw new IllegalArgumentException("variant must be one of ns-auto, ns-gemm, ns-symmetric, "
                    + "ns-gram, gemm, naive or torch-reference, got '" + variant + "'");
        };
    }

    private Tensor gemmsOnly() {
        for (int k = 0; k < STEPS; k++) {
            torch.mm_out(a, x, x.t());
            torch.mm_out(b, a, a);
            torch.mm_out(y, b, x);
        }
        return y;
    }

    /**
     * {@code torch.optim.Muon}'s iteration, op for op as {@code muon-bench/peer/pytorch_peer.py} runs it in Python
     * (normalise, {@code A = X·Xᵀ}, {@code B = addmm(A, A, A, b, c)}, {@code X = addmm(X, B, X, a)}), on this
     * libtorch through the same bindings: what is left between it and the PyTorch peer is the libtorch version and
     * its BLAS, not our kernels.
     */
    Tensor torchReference() {
        boolean tall = input.size(0) > input.size(1);
        Tensor xs = input.to(x.scalar_type());
        if (tall) {
            xs = xs.t();
        }
        xs = xs.div(xs.norm().clamp_min(new Scalar(1e-7)));
        for (int k = 0; k < STEPS; k++) {
            Tensor gram = xs.mm(xs.t());
            Tensor poly = torch.addmm(gram, gram, gram, sb, sc);
            xs = torch.addmm(xs, poly, xs, sa, new Scalar(1.0));
        }
        return tall ? xs.t() : xs;
    }

    /** The input of this trial (for tests). */
    Tensor input() {
        return input;
    }

    private Tensor naive() {
        Tensor g = input.to(x.scalar_type());
        Tensor xs = g.div(g.norm().clamp_min(new Scalar(1e-7)));
        for (int k = 0; k < STEPS; k++) {
            Tensor gram = xs.matmul(xs.t());
            Tensor poly = gram.mul(sb).add(gram.matmul(gram).mul(sc));
            xs = xs.mul(sa).add(poly.matmul(xs));
        }
        return xs;
    }
}
