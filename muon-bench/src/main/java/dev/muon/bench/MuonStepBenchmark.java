package dev.muon.bench;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
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

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What does one optimizer step cost on a GPT-2-small-width model, Muon against AdamW?
 *
 * <p>The parameter set: d = 768, 4 transformer blocks (q, k, v, o of 768×768, MLP 3072×768 and 768×3072, two
 * layer norms, biases), token embedding 8192×768, position embedding 1024×768, untied head 8192×768. Gradients are
 * random and set once. Variants: {@code adamw} is libtorch's {@code AdamW} over every parameter; {@code muon} puts
 * the 24 hidden matrices on {@link Muon} (5 NS steps) and the rest on libtorch's {@code AdamW}, as the hybrid
 * optimizer does. {@code nsPrecision} and {@code nsAlgorithm} apply to the Muon side.
 *
 * <p>How to run: {@code java -jar muon-bench/target/benchmarks.jar MuonStepBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class MuonStepBenchmark {
    private static final int D = 768;
    private static final int LAYERS = 4;
    private static final int VOCAB = 8192;
    private static final int CONTEXT = 1024;

    /** Which optimizer steps. */
    @Param({"adamw", "muon"})
    public String optimizer;

    /** The Muon side's Newton–Schulz precision. */
    @Param({"float32", "bfloat16"})
    public String nsPrecision;

    /** The Muon side's kernel choice. */
    @Param({"AUTO", "GEMM"})
    public String nsAlgorithm;

    private PointerScope scope;
    private Runnable step;

    /** Builds the parameter set, its gradients and the optimizer, and runs one step to create all state. */
    @Setup(Level.Trial)
    public void setUp() {
        scope = new PointerScope();
        torch.manual_seed(0);
        List<Tensor> hidden = new ArrayList<>();
        List<Tensor> rest = new ArrayList<>();
        rest.add(parameter(VOCAB, D));
        rest.add(parameter(CONTEXT, D));
        for (int layer = 0; layer < LAYERS; layer++) {
            for (int i = 0; i < 4; i++) {
                hidden.add(parameter(D, D));
                rest.add(parameter(D));
            }
            hidden.add(parameter(4 * D, D));
            rest.add(parameter(4 * D));
            hidden.add(parameter(D, 4 * D));
            rest.add(parameter(D));
            for (int i = 0; i < 4; i++) {
                rest.add(parameter(D));
            }
        }
        rest.add(parameter(VOCAB, D));
        if (optimizer.equals("adamw")) {
            List<Tensor> all = new ArrayList<>(hidden);
            all.addAll(rest);
            AdamW adamw = new AdamW(new TensorVector(all.toArray(new Tensor[0])), new AdamWOptions(1e-3));
            step = adamw::step;
        } else {
            MuonConfig config = MuonConfig.defaults().withLr(0.02)
                    .withNsPrecision(nsPrecision.equals("bfloat16") ? NsPrecision.BFLOAT16 : NsPrecision.FLOAT32)
                    .withNsAlgorithm(NsAlgorithm.valueOf(nsAlgorithm));
            Muon muon = Muon.of(hidden, config);
            AdamW adamw = new AdamW(new TensorVector(rest.toArray(new Tensor[0])), new AdamWOptions(1e-3));
            step = () -> {
                muon.step();
                adamw.step();
            };
        }
        step.run();
    }

    private static Tensor parameter(long... shape) {
        Tensor p = torch.randn(shape).mul_(new org.bytedeco.pytorch.Scalar(0.02)).requires_grad_(true);
        p.mutable_grad().put(torch.randn(shape).mul_(new org.bytedeco.pytorch.Scalar(1e-3)));
        return p;
    }

    /** Frees the native memory of this trial. */
    @TearDown(Level.Trial)
    public void tearDown() {
        scope.close();
    }

    /** One optimizer step over the whole parameter set. */
    @Benchmark
    public void step() {
        try (PointerScope call = new PointerScope()) {
            step.run();
        }
    }
}
