package dev.muon.examples.djl;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.PairList;
import dev.muon.AdamWConfig;
import dev.muon.MuonConfig;
import dev.muon.djl.MuonAdamW;
import dev.muon.orthogonalize.NsAlgorithm;
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
 * One optimizer step of a GPT-2-small-width transformer block ({@code d = 768}) through DJL: {@link MuonAdamW}
 * against DJL's own {@code Adam} on the same parameters and gradients, float32, as DJL's {@code ParameterStore}
 * calls them (one {@code update} per parameter). The block's matrices are those of GPT-2: attention
 * {@code c_attn [2304, 768]} and {@code c_proj [768, 768]} (4·d²), MLP {@code c_fc [3072, 768]} and
 * {@code c_proj [768, 3072]} (8·d²), on Muon (the output-layer rule is off: a block has no head); their biases and
 * the two layer norms' gains and biases, on AdamW. Each iteration updates every parameter once, gradients and
 * optimizer state already in place; Newton–Schulz runs five float32 iterations per matrix, on muon-core's native
 * kernels ({@code muon-adamw}, where they load) or DJL's matrix products ({@code muon-adamw-ndarray}).
 * {@code -p model=mnist-mlp} steps DJL's MNIST MLP instead, whose small matrices show what a call into DJL costs.
 *
 * <p>How to run (from the repository root; the profile sets {@code OPT_OUT_TRACKING=true} and
 * {@code DJL_OFFLINE=true}, and {@code threads} sets libtorch's intra-op threads):
 * <pre>
 * mvn -B -q -pl examples-djl -am -Pbench-djl -DskipTests package -Djmh.args="-p threads=1"
 * </pre>
 * and {@code -Djmh.args="-f 1 -wi 0 -i 1"} for a smoke run.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = "-Xmx4g")
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 5)
public class DjlStepBenchmark {
    private static final int D = 768;
    /** The optimizers {@link #optimizer} takes. */
    static final List<String> OPTIMIZERS = List.of("muon-adamw", "muon-adamw-aol", "muon-adamw-ndarray", "adam");
    /** The parameter sets {@link #model} takes. */
    static final List<String> MODELS = List.of("gpt2-block", "mnist-mlp");

    /**
     * Which optimizer steps: {@code muon-adamw} (muon-djl's hybrid, its Newton–Schulz on muon-core's native float32
     * kernels where they run, as {@code AUTO} picks), {@code muon-adamw-aol} (the same with Turbo-Muon's AOL
     * preconditioning and four iterations, {@code withAol()}), {@code muon-adamw-ndarray} (the first on DJL's NDArray
     * products, {@code GEMM}) or {@code adam} (DJL's).
     */
    @Param({"muon-adamw", "muon-adamw-aol", "muon-adamw-ndarray", "adam"})
    public String optimizer;

    /**
     * The parameters: {@code gpt2-block} (the GPT-2-small-width block above) or {@code mnist-mlp} (DJL's MNIST MLP of
     * {@code FashionMnistDjl}, {@code 784 → 128 → 64 → 10}: its two hidden matrices on Muon, the last layer and the
     * biases on AdamW), where a step's cost is what small matrices cost through DJL.
     */
    @Param({"gpt2-block"})
    public String model;

    /** libtorch's intra-op threads (DJL's {@code ai.djl.pytorch.num_threads}); set before the engine starts. */
    @Param({"1"})
    public int threads;

    private NDManager manager;
    private Optimizer step;
    private final List<String> ids = new ArrayList<>();
    private final List<NDArray> weights = new ArrayList<>();
    private final List<NDArray> grads = new ArrayList<>();

    /** Builds the block's parameters with gradients, and the optimizer, and runs one step so that state exists. */
    @Setup(Level.Trial)
    public void setUp() {
        // The settings first, so that a misspelt one is refused before the engine starts, never taken for another.
        if (!OPTIMIZERS.contains(optimizer)) {
            throw new IllegalArgumentException("optimizer must be one of " + OPTIMIZERS + ", got '" + optimizer
                    + "'");
        }
        if (!MODELS.contains(model)) {
            throw new IllegalArgumentException("model must be gpt2-block or mnist-mlp, got '" + model + "'");
        }
        System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        manager = NDManager.newBaseManager();
        Engine.getInstance().setRandomSeed(1);
        AbstractBlock block;
        if (model.equals("mnist-mlp")) {
            block = FashionMnistDjl.mlp();
            block.initialize(manager, DataType.FLOAT32, new Shape(1, 28 * 28));
        } else {
            block = new GptBlock(manager, D);
        }
        block.getParameters().forEach(p -> {
            Parameter parameter = p.getValue();
            ids.add(parameter.getId());
            weights.add(parameter.getArray());
            grads.add(manager.randomNormal(parameter.getArray().getShape()).muli(1e-3));
        });
        // Gradients on the weights, as a backward pass leaves them: both optimizers zero them after an update.
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            NDArray loss = null;
            for (int i = 0; i < weights.size(); i++) {
                NDArray term = weights.get(i).mul(grads.get(i)).sum();
                loss = loss == null ? term : loss.add(term);
            }
            collector.backward(loss);
        }
        Tracker lr = Tracker.fixed(1e-3f);
        MuonConfig muon = MuonConfig.dropIn(AdamWConfig.defaults().lr(),
                AdamWConfig.defaults().weightDecay()).withNsAlgorithm(
                optimizer.equals("muon-adamw-ndarray") ? NsAlgorithm.GEMM : NsAlgorithm.AUTO);
        if (optimizer.equals("muon-adamw-aol")) {
            muon = muon.withAol();
        }
        step = optimizer.equals("adam") ? Optimizer.adam().optLearningRateTracker(lr).build()
                : MuonAdamW.builder().optBlock(block).optMuon(muon).optLearningRateTracker(lr)
                .optOutputLayerOnAdamW(model.equals("mnist-mlp")).build();
        stepAll();
    }

    /** Releases the arrays. */
    @TearDown(Level.Trial)
    public void tearDown() {
        manager.close();
    }

    /** One optimizer step: every parameter updated once. */
    @Benchmark
    public void optimizerStep() {
        stepAll();
    }

    private void stepAll() {
        for (int i = 0; i < ids.size(); i++) {
            step.update(ids.get(i), weights.get(i), grads.get(i));
        }
        // DJL's updates are asynchronous only on GPUs; on the CPU each call has finished when it returns.
    }

    /**
     * The parameters of one GPT-2 block of width {@code d}, under GPT-2's names, initialized N(0, 0.02) and taking
     * gradients; the benchmark steps them without running the block.
     */
    static final class GptBlock extends AbstractBlock {
        private final NDManager manager;

        GptBlock(NDManager manager, int d) {
            this.manager = manager;
            add("ln_1_weight", d);
            add("ln_1_bias", d);
            add("attn_c_attn_weight", 3 * d, d);
            add("attn_c_attn_bias", 3 * d);
            add("attn_c_proj_weight", d, d);
            add("attn_c_proj_bias", d);
            add("ln_2_weight", d);
            add("ln_2_bias", d);
            add("mlp_c_fc_weight", 4 * d, d);
            add("mlp_c_fc_bias", 4 * d);
            add("mlp_c_proj_weight", d, 4 * d);
            add("mlp_c_proj_bias", d);
        }

        private void add(String name, long... shape) {
            NDArray array = manager.randomNormal(0, 0.02f, new Shape(shape), DataType.FLOAT32);
            array.setRequiresGradient(true);
            addParameter(Parameter.builder().setName(name).setType(Parameter.Type.WEIGHT).optArray(array).build());
        }

        @Override
        protected NDList forwardInternal(ParameterStore store, NDList inputs, boolean training,
                                         PairList<String, Object> params) {
            throw new UnsupportedOperationException("the benchmark steps the parameters only");
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            throw new UnsupportedOperationException("the benchmark steps the parameters only");
        }
    }
}
