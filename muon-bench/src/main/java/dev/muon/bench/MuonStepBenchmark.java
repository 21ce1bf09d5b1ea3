package dev.muon.bench;

import dev.muon.HyperballConfig;
import dev.muon.MomentumPrecision;
import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.MuownConfig;
import dev.muon.NorMuonConfig;
import dev.muon.RadialBrakeConfig;
import dev.muon.RelativeUpdateConfig;
import dev.muon.UpdateFloorConfig;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import static dev.muon.bench.Gpt2Small.CONTEXT;
import static dev.muon.bench.Gpt2Small.WIDTH;

/**
 * What does one optimizer step cost, Muon against AdamW, and what does same-shape batching save?
 *
 * <p>Two parameter sets ({@code model}). {@code gpt2-small-width}: d = 768, 4 transformer blocks (q, k, v, o of
 * 768×768, MLP 3072×768 and 768×3072, two layer norms, biases), token embedding 8192×768, position embedding
 * 1024×768, untied head 8192×768. {@code small-24x256}: 6 blocks of q, k, v, o projections of 256×256 and nothing
 * else, the 24 small same-shape matrices of the batching question. Gradients are random and set once. Variants:
 * {@code adamw} is libtorch's {@code AdamW} over every parameter; {@code muon} puts the hidden matrices (24 in
 * each set) on {@link Muon} (5 NS steps) and the rest, if any, on libtorch's {@code AdamW} by hand;
 * {@code muon-adamw} is {@link MuonAdamW} over the named parameters (its default rules make the same split, and
 * its step adds the non-finite check of every gradient). {@code nsPrecision}, {@code nsAlgorithm} and
 * {@code batching} ({@link MuonConfig#withBatchSameShape}) apply to the Muon side. Under the rule of
 * {@link Muon#BATCH_MAX_SIDE}, on a CPU, {@code small-24x256} batches with {@code nsPrecision=bfloat16} or
 * {@code nsAlgorithm=GEMM} (with float32 and {@code AUTO} its 256×256 matrices keep the symmetric kernel, so
 * {@code on} and {@code off} run the same code there), and {@code gpt2-small-width} batches its 16 square
 * 768×768 matrices with {@code nsPrecision=bfloat16} only, and only where muon-core's native bfloat16 half product
 * does not run ({@code NativeKernels}): where it runs, they take the symmetric kernel one by one, so {@code on} and
 * {@code off} run the same code.
 *
 * <p>Not in the default list either: {@code fashion-mlp}, the main job's 784-256-256-10 MLP ({@code FashionMlp}),
 * its two hidden matrices on Muon and its biases and head on AdamW, for the step where Newton–Schulz is most of a
 * small model's update ({@code -p model=fashion-mlp -p optimizer=adamw,muon-adamw -p variant=plain,aol}).
 *
 * <p>The scale curve's sets, not in the default list: {@code block-D} for a width {@code D} is one transformer
 * block's matrices, q, k, v, o of D×D (attention, 4·D²) and the MLP's 4D×D and D×4D (8·D²), all on Muon's side
 * ({@code -p model=block-768,block-1024,block-1280,block-1600,block-2048 -p optimizer=muon}). With
 * {@code -Dmuon.bench.residentOut=FILE} in the forked JVM ({@code -jvmArgsAppend}), each trial appends one JSON line
 * to FILE with its parameters and the process's resident memory in MiB: {@code before} (parameters and gradients
 * made), {@code after} (the optimizer built and one step run: its state and workspaces) and {@code peak} (the
 * high-water mark since {@code before}); {@code muon-bench/peer/scale_curve.sh} reads them.
 *
 * <p>How to run: {@code java -jar muon-bench/target/benchmarks.jar MuonStepBenchmark}; the batching question
 * alone: {@code java -jar muon-bench/target/benchmarks.jar MuonStepBenchmark -p model=small-24x256
 * -p optimizer=muon -p batching=on,off}; the scale curve: {@code muon-bench/peer/scale_curve.sh}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
// Five-second iterations after three of warm-up: with two-second ones an iteration held one or two steps of up to
// 1.7 s, so a single slow step was a fifth of the sample and the error reached 15-60 % of the mean; five seconds
// gave 6 % (float32) and 8 % (bfloat16) in the same window (docs/benchmarks.md, "The step's spread").
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 5)
@Fork(1)
public class MuonStepBenchmark {
    /** The GPT-2-small-width set's blocks (also {@link DistributedMuonBenchmark}'s). */
    static final int LAYERS = 4;
    private static final int VOCAB = 8192;
    private static final int SMALL_D = 256;
    private static final int SMALL_LAYERS = 6;
    private static final String BLOCK = "block-";
    /** One GPT-2 block with its fused attention matrix, as examples-djl's {@code DjlStepBenchmark} builds it. */
    private static final String GPT2_BLOCK = "gpt2-block";
    /** The main job's model, examples' {@code FashionMlp}: 784 → 256 → 256 → 10. */
    static final String FASHION_MLP = "fashion-mlp";
    /** The system property naming the file the trial's resident memory is appended to. */
    static final String RESIDENT_OUT = "muon.bench.residentOut";
    /** muon-core's switch that keeps a new optimizer's CPU momentum and update on libtorch's ops. */
    private static final String DISABLE_UPDATE_STAGES = "dev.muon.native.disableUpdateStages";
    /** The optimizers {@link #optimizer} takes. */
    static final List<String> OPTIMIZERS = List.of("adamw", "muon", "muon-adamw", "adamw-side", "torch-reference");
    /** The update variants {@link #variant} takes. */
    static final List<String> VARIANTS = List.of("plain", "cautious-wd", "bf16-momentum", "normuon", "hyperball",
            "radial-brake", "relative-update", "update-floor", "muown", "aol");

    /** The parameter set (see the class javadoc; {@code block-D} sets are given with {@code -p}). */
    @Param({"gpt2-small-width", "small-24x256"})
    public String model;

    /**
     * Which optimizer steps; also {@code torch-reference} (not in the default list): {@link TorchReferenceStep},
     * {@code torch.optim.Muon}'s formulas on libtorch's ops for the hidden matrices and libtorch's AdamW for the
     * rest, with the Muon side's settings; the same harness over a step with no code of ours in it, the control for
     * this benchmark's spread. And {@code adamw-side}: {@code MuonAdamW} with every parameter on its AdamW side,
     * libtorch's AdamW update without its temporaries, against {@code adamw}'s libtorch {@code AdamW} over the same.
     */
    @Param({"adamw", "muon", "muon-adamw"})
    public String optimizer;

    /** The Muon side's Newton–Schulz precision. */
    @Param({"float32", "bfloat16"})
    public String nsPrecision;

    /** The Muon side's kernel choice. */
    @Param({"AUTO", "GEMM"})
    public String nsAlgorithm;

    /** Same-shape batching on the Muon side: {@code on} is the default, {@code off} forces it off. */
    @Param({"on", "off"})
    public String batching;

    /**
     * An update variant on the Muon side, to measure what it costs: {@code plain} (the default), {@code cautious-wd}
     * ({@link MuonConfig#withCautiousWeightDecay}), {@code bf16-momentum} ({@link MomentumPrecision#BFLOAT16}),
     * {@code normuon}, {@code hyperball}, {@code radial-brake}, {@code relative-update}, {@code update-floor} (per
     * row), {@code muown} (Nesterov off, as it requires) or {@code aol} ({@link MuonConfig#withAol}: AOL, four
     * steps); each with its defaults.
     */
    @Param({"plain"})
    public String variant;

    /**
     * The Muon side's momentum and update passes on the CPU: {@code native} (muon-core's one-pass stages where its
     * native kernels run, the default) or {@code libtorch} (libtorch's ops, through
     * {@code -Ddev.muon.native.disableUpdateStages=true}); the two give the same bits.
     */
    @Param({"native"})
    public String updateStages;

    private PointerScope scope;
    private Runnable step;
    /** The Muon side's state bytes after the first step, printed with the results; null for AdamW alone. */
    private LongSupplier muonState;

    /** Builds the parameter set, its gradients and the optimizer, and runs one step to create all state. */
    @Setup(Level.Trial)
    public void setUp() {
        // The settings first, so that a misspelt one is refused before anything is built, never taken for another.
        if (!OPTIMIZERS.contains(optimizer)) {
            throw new IllegalArgumentException("optimizer must be one of " + OPTIMIZERS + ", got '" + optimizer
                    + "'");
        }
        if (!batching.equals("on") && !batching.equals("off")) {
            throw new IllegalArgumentException("batching must be on or off, got " + batching);
        }
        NsPrecision precision = NsDtype.precisionOf("nsPrecision", nsPrecision);
        scope = new PointerScope();
        torch.manual_seed(0);
        List<Tensor> hidden = new ArrayList<>();
        List<Tensor> rest = new ArrayList<>();
        Map<String, Tensor> named = new LinkedHashMap<>();
        if (model.startsWith(BLOCK)) {
            block(blockWidth(model), hidden, named);
        } else {
            switch (model) {
                case "gpt2-small-width" -> gpt2SmallWidth(hidden, rest, named);
                case "small-24x256" -> small24x256(hidden, named);
                case GPT2_BLOCK -> gpt2Block(hidden, rest, named);
                case FASHION_MLP -> fashionMlp(hidden, rest, named);
                default -> throw new IllegalArgumentException("model must be gpt2-small-width, small-24x256, "
                        + GPT2_BLOCK + ", " + FASHION_MLP + " or " + BLOCK + "D for a width D, got " + model);
            }
        }
        ResidentMemory before = ResidentMemory.sinceNow();
        MuonConfig config = MuonConfig.defaults().withLr(0.02)
                .withNsPrecision(precision)
                .withNsAlgorithm(NsAlgorithm.valueOf(nsAlgorithm))
                .withBatchSameShape(batching.equals("on"));
        config = switch (variant) {
            case "plain" -> config;
            case "cautious-wd" -> config.withCautiousWeightDecay(true);
            case "bf16-momentum" -> config.withMomentumPrecision(MomentumPrecision.BFLOAT16);
            case "normuon" -> config.withNorMuon(NorMuonConfig.defaults());
            case "hyperball" -> config.withWeightDecay(0).withHyperball(HyperballConfig.defaults());
            case "radial-brake" -> config.withRadialBrake(RadialBrakeConfig.defaults());
            case "relative-update" -> config.withRelativeUpdate(RelativeUpdateConfig.defaults());
            case "update-floor" -> config.withUpdateFloor(UpdateFloorConfig.defaults().withPerRow(true));
            case "muown" -> config.withNesterov(false).withMuown(MuownConfig.defaults());
            case "aol" -> config.withAol();
            default -> throw new IllegalArgumentException("variant must be one of " + VARIANTS + ", got " + variant);
        };
        switch (updateStages) {
            case "native" -> System.clearProperty(DISABLE_UPDATE_STAGES);
            case "libtorch" -> System.setProperty(DISABLE_UPDATE_STAGES, "true");
            default -> throw new IllegalArgumentException("updateStages must be native or libtorch, got "
                    + updateStages);
        }
        if (optimizer.equals("muon-adamw")) {
            // Both sets put exactly the `hidden` list on Muon, as the muon rows do: the small set has no head, so
            // the output-layer rule would otherwise move its last projection to AdamW.
            MuonAdamW hybrid = MuonAdamW.builder(named).muon(config).outputLayerOnAdamW(false).build();
            step = hybrid::step;
            muonState = hybrid::muonStateBytes;
        } else if (optimizer.equals("adamw-side")) {
            step = MuonAdamW.builder(named).muonWhen((name, p) -> false).allowEmptyMuon(true).build()::step;
        } else if (optimizer.equals("adamw")) {
            List<Tensor> all = new ArrayList<>(hidden);
            all.addAll(rest);
            AdamW adamw = new AdamW(new TensorVector(all.toArray(new Tensor[0])), new AdamWOptions(1e-3));
            step = adamw::step;
        } else if (optimizer.equals("torch-reference")) {
            step = new TorchReferenceStep(hidden, config, rest, new AdamWOptions(1e-3))::step;
        } else if (rest.isEmpty()) {
            Muon muon = Muon.of(hidden, config);
            step = muon::step;
            muonState = muon::stateBytes;
        } else {
            Muon muon = Muon.of(hidden, config);
            muonState = muon::stateBytes;
            AdamW adamw = new AdamW(new TensorVector(rest.toArray(new Tensor[0])), new AdamWOptions(1e-3));
            step = () -> {
                muon.step();
                adamw.step();
            };
        }
        step.run();
        System.out.println("# " + CpuCapabilities.summary().replace('\n', ','));
        if (muonState != null) {
            System.out.println("# Muon state bytes (" + variant + "): " + muonState.getAsLong());
        }
        Map<String, String> params = new LinkedHashMap<>();
        params.put("model", model);
        params.put("optimizer", optimizer);
        params.put("nsPrecision", nsPrecision);
        params.put("nsAlgorithm", nsAlgorithm);
        params.put("batching", batching);
        params.put("variant", variant);
        params.put("updateStages", updateStages);
        before.report(System.getProperty(RESIDENT_OUT), params);
    }

    /** The width {@code D} of a {@code block-D} set. */
    static int blockWidth(String model) {
        String digits = model.substring(BLOCK.length());
        if (!digits.matches("[1-9][0-9]{0,5}")) {
            throw new IllegalArgumentException("model " + BLOCK + "D needs a width D from 1 to 999999, got "
                    + model);
        }
        return Integer.parseInt(digits);
    }

    /** One transformer block's matrices at width d: q, k, v, o (4·d²) and the MLP's two (8·d²), all on Muon. */
    private static void block(int d, List<Tensor> hidden, Map<String, Tensor> named) {
        for (String proj : new String[]{"q", "k", "v", "o"}) {
            hidden.add(named(named, "attn." + proj + ".weight", parameter(d, d)));
        }
        hidden.add(named(named, "mlp.fc.weight", parameter(4L * d, d)));
        hidden.add(named(named, "mlp.proj.weight", parameter(d, 4L * d)));
    }

    /**
     * One GPT-2-small-width block as GPT-2 stores it and examples-djl's {@code DjlStepBenchmark} builds it, so that
     * muon-djl's step can be compared with muon-core's on the same shapes: {@code c_attn} [2304, 768] (q, k and v
     * fused) and {@code c_proj} [768, 768], the MLP's [3072, 768] and [768, 3072] on Muon; their biases and the two
     * layer norms on AdamW.
     */
    static void gpt2Block(List<Tensor> hidden, List<Tensor> rest, Map<String, Tensor> named) {
        for (String norm : new String[]{"ln_1", "ln_2"}) {
            rest.add(named(named, norm + ".weight", parameter(WIDTH)));
            rest.add(named(named, norm + ".bias", parameter(WIDTH)));
        }
        hidden.add(named(named, "attn.c_attn.weight", parameter(3 * WIDTH, WIDTH)));
        rest.add(named(named, "attn.c_attn.bias", parameter(3 * WIDTH)));
        hidden.add(named(named, "attn.c_proj.weight", parameter(WIDTH, WIDTH)));
        rest.add(named(named, "attn.c_proj.bias", parameter(WIDTH)));
        hidden.add(named(named, "mlp.c_fc.weight", parameter(4 * WIDTH, WIDTH)));
        rest.add(named(named, "mlp.c_fc.bias", parameter(4 * WIDTH)));
        hidden.add(named(named, "mlp.c_proj.weight", parameter(WIDTH, 4 * WIDTH)));
        rest.add(named(named, "mlp.c_proj.bias", parameter(WIDTH)));
    }

    /**
     * The GPT-2-small-width set: 24 hidden matrices on Muon's side, 43 other tensors on AdamW's (also
     * {@link SameProcessStep}'s).
     */
    static void gpt2SmallWidth(List<Tensor> hidden, List<Tensor> rest, Map<String, Tensor> named) {
        rest.add(named(named, "wte.weight", parameter(VOCAB, WIDTH)));
        rest.add(named(named, "wpe.weight", parameter(CONTEXT, WIDTH)));
        for (int layer = 0; layer < LAYERS; layer++) {
            String block = "blocks." + layer + ".";
            for (String proj : new String[]{"q", "k", "v", "o"}) {
                hidden.add(named(named, block + "attn." + proj + ".weight", parameter(WIDTH, WIDTH)));
                rest.add(named(named, block + "attn." + proj + ".bias", parameter(WIDTH)));
            }
            hidden.add(named(named, block + "mlp.fc.weight", parameter(4 * WIDTH, WIDTH)));
            rest.add(named(named, block + "mlp.fc.bias", parameter(4 * WIDTH)));
            hidden.add(named(named, block + "mlp.proj.weight", parameter(WIDTH, 4 * WIDTH)));
            rest.add(named(named, block + "mlp.proj.bias", parameter(WIDTH)));
            for (String norm : new String[]{"ln1", "ln2"}) {
                rest.add(named(named, block + norm + ".weight", parameter(WIDTH)));
                rest.add(named(named, block + norm + ".bias", parameter(WIDTH)));
            }
        }
        rest.add(named(named, "lm_head.weight", parameter(VOCAB, WIDTH)));
    }

    /**
     * The main job's MLP as examples' {@code FashionMlp} names it: {@code fc1} [256, 784] and {@code fc2}
     * [256, 256] on Muon, their biases and the 10-class head on AdamW, as {@code MuonAdamW.dropIn} splits it.
     */
    private static void fashionMlp(List<Tensor> hidden, List<Tensor> rest, Map<String, Tensor> named) {
        hidden.add(named(named, "fc1.weight", parameter(256, 784)));
        rest.add(named(named, "fc1.bias", parameter(256)));
        hidden.add(named(named, "fc2.weight", parameter(256, 256)));
        rest.add(named(named, "fc2.bias", parameter(256)));
        rest.add(named(named, "head.weight", parameter(10, 256)));
        rest.add(named(named, "head.bias", parameter(10)));
    }

    /** The batching set: 6 blocks of q, k, v, o of 256×256, all on Muon's side. */
    private static void small24x256(List<Tensor> hidden, Map<String, Tensor> named) {
        for (int layer = 0; layer < SMALL_LAYERS; layer++) {
            for (String proj : new String[]{"q", "k", "v", "o"}) {
                hidden.add(named(named, "blocks." + layer + ".attn." + proj + ".weight",
                        parameter(SMALL_D, SMALL_D)));
            }
        }
    }

    private static Tensor named(Map<String, Tensor> named, String name, Tensor tensor) {
        named.put(name, tensor);
        return tensor;
    }

    private static Tensor parameter(long... shape) {
        Tensor p = torch.randn(shape).mul_(new org.bytedeco.pytorch.Scalar(0.02)).requires_grad_(true);
        p.mutable_grad().put(torch.randn(shape).mul_(new org.bytedeco.pytorch.Scalar(1e-3)));
        return p;
    }

    /** The Muon side's state in bytes after the set-up's step, for tests; 0 for the rows without a Muon side. */
    long muonStateBytes() {
        return muonState == null ? 0 : muonState.getAsLong();
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
