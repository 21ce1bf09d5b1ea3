package dev.muon.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.StateStorage;
import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * What keeping Muon's state in files costs and saves ({@link StateStorage#files}): peak resident memory and step time
 * of a Muon over the hidden matrices of a GPT-2-medium-width stack on the CPU (d = 1024, {@code --layers} blocks of
 * q, k, v, o 1024×1024, MLP 4096×1024 and 1024×4096; float32, momentum in float32), with the state beside the
 * parameters, in files with read-ahead, in files without it, and in files whose pages are dropped from the page
 * cache before every step (the reads then come from the disk).
 *
 * <p>Each configuration runs in a JVM of its own, so that its peak resident memory ({@code VmHWM}, reset when the
 * parameters and gradients exist: {@link ResidentMemory}) is its own: the peak over the steps less the resident
 * size before the optimizer is built is what the optimizer holds at its worst (its state when it is resident,
 * about two matrices' buffers when it is in files, plus Newton–Schulz workspaces either way). Gradients are drawn in
 * place each step, outside the timed part. The step is timed whole ({@code Muon.step()}); medians over
 * {@code --steps} after {@code --warmup}. "Cold" drops the state file's pages with GNU {@code dd}'s
 * {@code oflag=nocache conv=notrunc,fdatasync count=0} between steps (outside the timing); it needs GNU coreutils
 * and a directory on a real disk (on tmpfs nothing is dropped). This is a launcher, not a JMH benchmark: a peak
 * resident size is per process.
 *
 * <p>How to run (about 40 minutes at 24 layers on 2 cores): {@code java -cp muon-bench/target/benchmarks.jar
 * dev.muon.bench.StateOffloadBenchmark --layers 24 --steps 5 --dir /path/on/the/disk/to/state
 * --out docs/data/state-offload.json}.
 */
@Command(name = "StateOffloadBenchmark", mixinStandardHelpOptions = true,
        description = "Peak resident memory and step time of Muon with its state beside the parameters and in files.")
public final class StateOffloadBenchmark implements Callable<Integer> {
    static {
        // Before the launcher or a trial loads libtorch (see TorchNatives for the crash this prevents).
        TorchNatives.extract();
    }

    private static final int D = 1024;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The configurations, by the names the results carry. */
    static final List<String> CONFIGS = List.of("with-parameter", "files", "files-no-read-ahead", "files-cold");

    @Option(names = "--configs", split = ",", defaultValue = "with-parameter,files,files-no-read-ahead,files-cold",
            description = "configurations to run (default: ${DEFAULT-VALUE})")
    List<String> configs;

    @Option(names = "--layers", defaultValue = "24", description = "transformer blocks (default: ${DEFAULT-VALUE}, "
            + "GPT-2 medium's)")
    int layers;

    @Option(names = "--steps", defaultValue = "5", description = "measured steps (default: ${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--warmup", defaultValue = "2", description = "steps before the measured ones (default: "
            + "${DEFAULT-VALUE})")
    int warmup;

    @Option(names = "--threads", defaultValue = "0",
            description = "intra-op threads (default: 0, libtorch's own choice)")
    int threads;

    @Option(names = "--dir", description = "the state files' directory (default: java.io.tmpdir)")
    Path dir;

    @Option(names = "--out", defaultValue = "state-offload.json", description = "result file (default: "
            + "${DEFAULT-VALUE})")
    Path out;

    // A trial's own arguments, set by the launcher.
    @Option(names = "--trial", hidden = true)
    String trial;

    @Option(names = "--result", hidden = true, defaultValue = "trial.json")
    Path result;

    /**
     * Launches the configurations, or runs one when started with {@code --trial}.
     *
     * @param args see {@code --help}
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new StateOffloadBenchmark()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Path stateDir = dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"));
        if (trial != null) {
            trial(trial, stateDir);
            return 0;
        }
        for (String config : configs) {
            if (!CONFIGS.contains(config)) {
                throw new IllegalArgumentException("--configs must name some of " + CONFIGS + ", got " + config);
            }
        }
        ArrayNode all = JSON.createArrayNode();
        for (String config : configs) {
            all.add(launch(config, stateDir));
        }
        JSON.writerWithDefaultPrettyPrinter().writeValue(out.toFile(), all);
        System.out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(all));
        return 0;
    }

    private ObjectNode launch(String config, Path stateDir) throws Exception {
        Path work = Files.createTempDirectory("muon-offload-bench");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"),
                StateOffloadBenchmark.class.getName(), "--trial", config, "--layers", String.valueOf(layers),
                "--steps", String.valueOf(steps), "--warmup", String.valueOf(warmup), "--threads",
                String.valueOf(threads), "--dir", stateDir.toString(), "--result",
                work.resolve("trial.json").toString()));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().putIfAbsent("OMP_WAIT_POLICY", "PASSIVE");
        builder.environment().putIfAbsent("OPENBLAS_THREAD_TIMEOUT", "4");
        builder.redirectErrorStream(true);
        builder.redirectOutput(work.resolve("trial.log").toFile());
        Process process = builder.start();
        if (!process.waitFor(3, TimeUnit.HOURS) || process.exitValue() != 0) {
            process.destroyForcibly();
            throw new IllegalStateException(config + " failed; see " + work.resolve("trial.log"));
        }
        return (ObjectNode) JSON.readTree(work.resolve("trial.json").toFile());
    }

    private static StateStorage storage(String config, Path stateDir) {
        return switch (config) {
            case "with-parameter" -> StateStorage.withParameter();
            case "files", "files-cold" -> StateStorage.files(stateDir);
            case "files-no-read-ahead" -> StateStorage.files(stateDir).withReadAhead(false);
            default -> throw new IllegalArgumentException("unknown configuration " + config);
        };
    }

    private void trial(String config, Path stateDir) throws IOException, InterruptedException {
        if (threads > 0) {
            torch.set_num_threads(threads);
        }
        torch.manual_seed(1);
        try (PointerScope scope = new PointerScope()) {
            List<Tensor> params = new ArrayList<>();
            for (long[] s : HiddenShapes.of(D, layers)) {
                Tensor p = torch.randn(s).mul_(new Scalar(0.02)).requires_grad_(true);
                p.mutable_grad().put(torch.randn(s));
                params.add(p);
            }
            List<Path> before = stateFiles(stateDir);
            ResidentMemory memory = ResidentMemory.sinceNow();
            Muon muon = Muon.builder().addGroup(params, MuonConfig.defaults().withLr(0.02))
                    .stateStorage(storage(config, stateDir)).build();
            List<Path> ours = new ArrayList<>(stateFiles(stateDir));
            ours.removeAll(before);
            double[] ms = new double[steps];
            for (int s = -warmup; s < steps; s++) {
                try (PointerScope stepScope = new PointerScope()) {
                    for (Tensor p : params) {
                        p.mutable_grad().normal_();
                    }
                    if (config.equals("files-cold")) {
                        for (Path file : ours) {
                            dropFromPageCache(file);
                        }
                    }
                    long start = System.nanoTime();
                    muon.step();
                    if (s >= 0) {
                        ms[s] = (System.nanoTime() - start) / 1e6;
                    }
                }
            }
            long fileBytes = 0;
            for (Path file : ours) {
                fileBytes += Files.size(file);
            }
            Path report = result.resolveSibling("memory.jsonl");
            memory.report(report.toString(), java.util.Map.of("config", config));
            ObjectNode json = (ObjectNode) JSON.readTree(Files.readString(report, StandardCharsets.UTF_8).trim());
            double[] sorted = ms.clone();
            Arrays.sort(sorted);
            json.put("layers", layers);
            json.put("matrices", params.size());
            json.put("threads", torch.get_num_threads());
            json.put("steps", steps);
            json.put("stepMs", round(Median.ofSorted(sorted)));
            json.put("stepMsMin", round(sorted[0]));
            json.put("stepMsMax", round(sorted[sorted.length - 1]));
            json.put("muonStateMiB", round(muon.stateBytes() / 1048576.0));
            json.put("stateFileMiB", round(fileBytes / 1048576.0));
            json.put("stateDir", config.startsWith("files") ? stateDir.toAbsolutePath().toString() : "");
            muon.close();
            JSON.writeValue(result.toFile(), json);
        }
    }

    private static List<Path> stateFiles(Path stateDir) throws IOException {
        try (Stream<Path> list = Files.list(stateDir)) {
            return list.filter(f -> f.getFileName().toString().startsWith("muon-state-")).toList();
        }
    }

    /** Writes the file's dirty pages back and drops its pages from the page cache (GNU dd's documented idiom). */
    private static void dropFromPageCache(Path file) throws IOException, InterruptedException {
        Process dd = new ProcessBuilder("dd", "of=" + file, "oflag=nocache", "conv=notrunc,fdatasync", "count=0")
                .redirectErrorStream(true).start();
        String output = new String(dd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (dd.waitFor() != 0) {
            throw new IOException("dd could not drop " + file + " from the page cache: " + output);
        }
    }

    private static double round(double x) {
        return Math.round(x * 10) / 10.0;
    }
}
