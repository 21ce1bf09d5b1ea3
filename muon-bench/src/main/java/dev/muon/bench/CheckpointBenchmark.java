package dev.muon.bench;

import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.muon.bench.Gpt2Small.CONTEXT;
import static dev.muon.bench.Gpt2Small.LAYERS;
import static dev.muon.bench.Gpt2Small.VOCAB;
import static dev.muon.bench.Gpt2Small.WIDTH;

/**
 * How long do {@code save} and {@code load} of a GPT-2-small-sized {@link MuonAdamW} take?
 *
 * <p>The model: GPT-2 small's shapes ({@link Gpt2Small}: d = 768, 12 blocks, token embedding 50257×768 tied to the
 * head, position embedding 1024×768, biases and layer norms): 124 M parameters, 85 M of them in the 72 hidden matrices
 * on Muon. After one step the state holds every value, Muon's momentum and AdamW's two moments: a checkpoint of about
 * 1.15 GB. {@code save} writes it over the same file each time; {@code load} reads the file written in set-up. The file
 * lives in {@code -Dcheckpoint.dir} (default: the temporary directory); use a directory on the disk you train on, and
 * keep the page cache in mind (the file is read back warm).
 *
 * <p>How to run: {@code java -jar muon-bench/target/benchmarks.jar CheckpointBenchmark}. The code needs only
 * {@code save} and {@code load}, so the same class measures earlier versions of the library too.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 6)
@Fork(1)
public class CheckpointBenchmark {
    private PointerScope scope;
    private MuonAdamW optimizer;
    private Path dir;
    private Path saved;
    private Path loaded;

    /** Builds the model and the optimizer, runs one step, and writes the file {@code load} reads. */
    @Setup(Level.Trial)
    public void setUp() throws IOException {
        scope = new PointerScope();
        torch.manual_seed(0);
        Map<String, Tensor> named = new LinkedHashMap<>();
        Tensor wte = parameter(VOCAB, WIDTH);
        named.put("wte.weight", wte);
        named.put("wpe.weight", parameter(CONTEXT, WIDTH));
        for (int layer = 0; layer < LAYERS; layer++) {
            String block = "h." + layer + ".";
            named.put(block + "ln_1.weight", parameter(WIDTH));
            named.put(block + "ln_1.bias", parameter(WIDTH));
            for (String proj : new String[]{"q", "k", "v", "o"}) {
                named.put(block + "attn." + proj + ".weight", parameter(WIDTH, WIDTH));
                named.put(block + "attn." + proj + ".bias", parameter(WIDTH));
            }
            named.put(block + "ln_2.weight", parameter(WIDTH));
            named.put(block + "ln_2.bias", parameter(WIDTH));
            named.put(block + "mlp.fc.weight", parameter(4 * WIDTH, WIDTH));
            named.put(block + "mlp.fc.bias", parameter(4 * WIDTH));
            named.put(block + "mlp.proj.weight", parameter(WIDTH, 4 * WIDTH));
            named.put(block + "mlp.proj.bias", parameter(WIDTH));
        }
        named.put("ln_f.weight", parameter(WIDTH));
        named.put("ln_f.bias", parameter(WIDTH));
        named.put("lm_head.weight", wte);
        optimizer = MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(0.02)).build();
        for (Tensor p : named.values()) {
            if (!p.mutable_grad().defined()) {
                p.mutable_grad().put(torch.randn(p.shape()));
            }
        }
        optimizer.step();
        dir = Files.createTempDirectory(Path.of(System.getProperty("checkpoint.dir",
                System.getProperty("java.io.tmpdir"))), "muon-checkpoint-bench");
        saved = dir.resolve("saved.ckpt");
        loaded = dir.resolve("loaded.ckpt");
        optimizer.save(loaded);
    }

    private static Tensor parameter(long... shape) {
        return torch.randn(shape).mul_(new org.bytedeco.pytorch.Scalar(0.02)).requires_grad_(true);
    }

    /** One save of the whole state. */
    @Benchmark
    public void save() {
        optimizer.save(saved);
    }

    /** One load of the whole state. */
    @Benchmark
    public long load() {
        optimizer.load(loaded);
        return optimizer.stepCount();
    }

    /** Removes the files and frees the tensors. */
    @TearDown(Level.Trial)
    public void tearDown() {
        try {
            Files.deleteIfExists(saved);
            Files.deleteIfExists(loaded);
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        scope.close();
    }
}
