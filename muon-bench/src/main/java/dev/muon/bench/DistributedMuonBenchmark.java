package dev.muon.bench;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import dev.muon.distributed.ShardPlan;
import dev.muon.distributed.ShardingConfig;
import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * What does sharding buy per rank: the Newton–Schulz time each rank spends, the whole distributed Muon step, and
 * the bytes each rank moves per step, at W = 1, 2, 4 processes on this machine over Gloo on 127.0.0.1.
 *
 * <p>The parameter set is {@link MuonStepBenchmark}'s 24 hidden matrices of a GPT-2-small-width model (d = 768, 4
 * blocks: q, k, v, o of 768×768, MLP 3072×768 and 768×3072), float32, random gradients. Each rank runs with
 * {@code --threads} intra-op threads (default 1, so that W processes do not oversubscribe the cores). Per rank it
 * reports the median over the measured steps of: {@code nsMs}, the Newton–Schulz time of the matrices it owns;
 * {@code stepMs}, the whole {@code Muon.step()} with gradient averaging and the parameter broadcasts; and
 * {@code bytesPerStep}, the collective payload ({@link DistributedGroup#payloadBytes()}). This is a launcher, not a
 * JMH benchmark: JMH measures one JVM, and a distributed step needs W of them.
 *
 * <p>How to run: {@code java -cp muon-bench/target/benchmarks.jar dev.muon.bench.DistributedMuonBenchmark
 * --worlds 1,2,4 --steps 7 --out docs/data/distributed.json}.
 */
@Command(name = "DistributedMuonBenchmark", mixinStandardHelpOptions = true,
        description = "Launches W = 1, 2, 4 local processes over Gloo and measures a distributed Muon step.")
public final class DistributedMuonBenchmark implements Callable<Integer> {
    static {
        // Before the launcher or a rank loads libtorch (see TorchNatives for the crash this prevents).
        TorchNatives.extract();
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    @Option(names = "--worlds", split = ",", defaultValue = "1,2,4",
            description = "world sizes to launch (default: ${DEFAULT-VALUE})")
    List<Integer> worlds;

    @Option(names = "--steps", defaultValue = "7", description = "measured steps (default: ${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--threads", defaultValue = "1",
            description = "intra-op threads per rank (default: ${DEFAULT-VALUE})")
    int threads;

    @Option(names = "--out", defaultValue = "distributed.json", description = "result file (default: ${DEFAULT-VALUE})")
    Path out;

    // A rank's own arguments, set by the launcher.
    @Option(names = "--rank", hidden = true)
    Integer rank;

    @Option(names = "--world", hidden = true, defaultValue = "1")
    int world;

    @Option(names = "--port", hidden = true, defaultValue = "29500")
    int port;

    @Option(names = "--result", hidden = true, defaultValue = "rank.json")
    Path result;

    /**
     * Launches the worlds, or runs one rank when started with {@code --rank}.
     *
     * @param args see {@code --help}
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new DistributedMuonBenchmark()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (rank != null) {
            rank(rank, world, port, steps, threads, result);
            return 0;
        }
        ArrayNode all = JSON.createArrayNode();
        for (int w : worlds) {
            all.add(launch(w, steps, threads));
        }
        JSON.writerWithDefaultPrettyPrinter().writeValue(out.toFile(), all);
        System.out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(all));
        return 0;
    }

    private static ObjectNode launch(int world, int steps, int threads) throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        Path dir = Files.createTempDirectory("muon-dist-bench");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> processes = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            ProcessBuilder builder = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                    DistributedMuonBenchmark.class.getName(), "--rank", String.valueOf(r), "--world",
                    String.valueOf(world), "--port", String.valueOf(port), "--steps", String.valueOf(steps),
                    "--threads", String.valueOf(threads), "--result", dir.resolve("rank" + r + ".json").toString());
            builder.environment().put("OMP_WAIT_POLICY", "PASSIVE");
            // Both of libtorch's pools: OpenMP for elementwise work, OpenBLAS's own threads for the GEMMs.
            builder.environment().put("OMP_NUM_THREADS", String.valueOf(threads));
            builder.environment().put("OPENBLAS_NUM_THREADS", String.valueOf(threads));
            builder.redirectErrorStream(true);
            builder.redirectOutput(dir.resolve("rank" + r + ".log").toFile());
            processes.add(builder.start());
        }
        ObjectNode node = JSON.createObjectNode();
        node.put("world", world);
        node.put("threadsPerRank", threads);
        ArrayNode ranks = node.putArray("ranks");
        for (int r = 0; r < world; r++) {
            Process p = processes.get(r);
            if (!p.waitFor(15, TimeUnit.MINUTES) || p.exitValue() != 0) {
                processes.forEach(Process::destroyForcibly);
                throw new IllegalStateException("rank " + r + " of W=" + world + " failed; see "
                        + dir.resolve("rank" + r + ".log"));
            }
            ranks.add(JSON.readTree(dir.resolve("rank" + r + ".json").toFile()));
        }
        return node;
    }

    private static void rank(int rank, int world, int port, int steps, int threads, Path result)
            throws IOException {
        torch.set_num_threads(threads);
        torch.manual_seed(rank);
        try (DistributedGroup group = DistributedGroup.join(GroupConfig.of("127.0.0.1", port, rank, world)
                .withTimeout(Duration.ofMinutes(5)));
             PointerScope scope = new PointerScope()) {
            List<Tensor> params = new ArrayList<>();
            for (long[] s : HiddenShapes.of(Gpt2Small.WIDTH, MuonStepBenchmark.LAYERS)) {
                params.add(torch.randn(s).mul_(new org.bytedeco.pytorch.Scalar(0.02)).requires_grad_(true));
            }
            Muon muon = Muon.builder().addGroup(params, MuonConfig.defaults().withLr(0.02))
                    .distributed(group, ShardingConfig.defaults()).build();
            ShardPlan plan = muon.shardPlan().orElseThrow();
            NewtonSchulz ns = new NewtonSchulz(NewtonSchulzConfig.defaults());
            List<Tensor> owned = new ArrayList<>();
            for (int i : plan.ownedBy(rank)) {
                owned.add(torch.randn(params.get(i).shape()));
            }
            double[] nsMs = new double[steps];
            double[] stepMs = new double[steps];
            long[] bytes = new long[steps];
            int warmup = 2;
            for (int s = -warmup; s < steps; s++) {
                try (PointerScope stepScope = new PointerScope()) {
                    for (Tensor p : params) {
                        p.mutable_grad().put(torch.randn(p.shape()));
                    }
                    group.barrier("the start of a measured step");
                    long before = group.payloadBytes();
                    long t0 = System.nanoTime();
                    muon.step();
                    long t1 = System.nanoTime();
                    long after = group.payloadBytes();
                    long t2 = System.nanoTime();
                    try (NoGradGuard noGrad = new NoGradGuard()) {
                        for (Tensor m : owned) {
                            ns.orthogonalize(m);
                        }
                    }
                    long t3 = System.nanoTime();
                    if (s >= 0) {
                        stepMs[s] = (t1 - t0) / 1e6;
                        nsMs[s] = (t3 - t2) / 1e6;
                        bytes[s] = after - before;
                    }
                }
            }
            ObjectNode json = JSON.createObjectNode();
            json.put("rank", rank);
            json.put("owned", plan.ownedBy(rank).size());
            json.put("nsFlopsShare", round(plan.flops(rank) / (double) total(plan), 4));
            json.put("imbalance", round(plan.imbalance(), 4));
            json.put("nsMs", round(Median.of(nsMs), 1));
            json.put("nsMsMin", round(min(nsMs), 1));
            json.put("nsMsMax", round(max(nsMs), 1));
            json.put("stepMs", round(Median.of(stepMs), 1));
            json.put("stepMsMin", round(min(stepMs), 1));
            json.put("stepMsMax", round(max(stepMs), 1));
            json.put("bytesPerStep", bytes[0]);
            json.put("muonStateBytes", muon.stateBytes());
            JSON.writeValue(result.toFile(), json);
        }
        System.exit(0);
    }

    private static double round(double x, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(x * scale) / scale;
    }

    private static long total(ShardPlan plan) {
        long sum = 0;
        for (int r = 0; r < plan.worldSize(); r++) {
            sum += plan.flops(r);
        }
        return sum;
    }

    private static double min(double[] v) {
        return Arrays.stream(v).min().orElse(Double.NaN);
    }

    private static double max(double[] v) {
        return Arrays.stream(v).max().orElse(Double.NaN);
    }
}
