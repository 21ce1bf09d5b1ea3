package dev.muon.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The scale curve's measurements joined per width and dtype: our {@link MuonStepBenchmark} {@code block-D} trials
 * (JMH JSON, and the resident memory lines of {@code -Dmuon.bench.residentOut}) against the PyTorch peer's
 * ({@code pytorch_peer.py --block D}, one JSON per run; where several runs measured a point, in several OpenMP
 * environments, the fastest counts, as {@code ratios.py} does for {@code compare.sh}).
 */
final class ScaleScores {
    private static final String BENCHMARK = MuonStepBenchmark.class.getName() + ".step";
    private static final ObjectMapper JSON = new ObjectMapper();

    private ScaleScores() {
    }

    /**
     * One point of the curve: one width and dtype, both optimizers.
     *
     * @param width     the block's width D
     * @param dtype     {@code float32} or {@code bfloat16}, the Newton–Schulz precision
     * @param oursMs    our step, ms (JMH's score)
     * @param oursError the half-width of JMH's 99.9% interval, 0 where it gave none
     * @param peerMs    PyTorch's step, ms (the fastest run's median)
     * @param peerRun   the file of that run
     * @param oursMib   our resident memory: {@code after - before} and {@code peak - before}, MiB (NaN: none)
     * @param peerMib   PyTorch's, the same two, from the fastest run
     */
    record Point(int width, String dtype, double oursMs, double oursError, double peerMs, String peerRun,
                 Memory oursMib, Memory peerMib) {
        /** PyTorch's time over ours. */
        double ratio() {
            return peerMs / oursMs;
        }
    }

    /**
     * What an optimizer added to the process's resident memory.
     *
     * @param held the state and workspaces after its first step ({@code after - before})
     * @param peak the most at any time during it ({@code peak - before})
     */
    record Memory(double held, double peak) {
        static final Memory NONE = new Memory(Double.NaN, Double.NaN);

        static Memory of(double before, double after, double peak) {
            return new Memory(after - before, peak - before);
        }
    }

    /**
     * Joins our trials with the peer's runs; a point either side lacks is left out.
     *
     * @param ours       our JMH JSON
     * @param oursMemory our resident memory lines, or null
     * @param peers      the peer's JSON files
     * @return the points, by dtype then width
     * @throws IOException              if a file cannot be read
     * @throws IllegalArgumentException if a file is not of its kind, or no point has both sides
     */
    static List<Point> read(Path ours, Path oursMemory, List<Path> peers) throws IOException {
        Map<String, double[]> ourTimes = readOurs(ours);
        Map<String, Memory> ourMemory = oursMemory == null ? Map.of() : readOurMemory(oursMemory);
        Map<String, JsonNode> fastest = new LinkedHashMap<>();
        Map<String, String> fastestRun = new LinkedHashMap<>();
        for (Path file : peers) {
            JsonNode block = JSON.readTree(file.toFile()).path("block");
            if (!block.isObject()) {
                throw new IllegalArgumentException(file + " holds no \"block\" timings (pytorch_peer.py --block D)");
            }
            for (Map.Entry<String, JsonNode> e : block.properties()) {
                JsonNode best = fastest.get(e.getKey());
                if (best == null || e.getValue().path("median_ms").asDouble() < best.path("median_ms").asDouble()) {
                    fastest.put(e.getKey(), e.getValue());
                    fastestRun.put(e.getKey(), file.getFileName().toString());
                }
            }
        }
        List<Point> points = new ArrayList<>();
        for (Map.Entry<String, double[]> e : ourTimes.entrySet()) {
            JsonNode peer = fastest.get(e.getKey());
            if (peer == null) {
                continue;
            }
            String[] key = e.getKey().split("/");
            Memory peerMemory = peer.has("before_mib") ? Memory.of(peer.path("before_mib").asDouble(),
                    peer.path("after_mib").asDouble(), peer.path("peak_mib").asDouble()) : Memory.NONE;
            points.add(new Point(Integer.parseInt(key[0]), key[1], e.getValue()[0], e.getValue()[1],
                    peer.path("median_ms").asDouble(), fastestRun.get(e.getKey()),
                    ourMemory.getOrDefault(e.getKey(), Memory.NONE), peerMemory));
        }
        if (points.isEmpty()) {
            throw new IllegalArgumentException("no width and dtype measured on both sides: ours " + ourTimes.keySet()
                    + ", the peer's " + fastest.keySet());
        }
        points.sort(Comparator.comparing(Point::dtype).reversed().thenComparingInt(Point::width));
        return points;
    }

    /** "D/dtype" to {ms, error} of every {@code block-D} Muon step in a JMH JSON file. */
    private static Map<String, double[]> readOurs(Path file) throws IOException {
        Map<String, double[]> out = new LinkedHashMap<>();
        for (JmhResult record : JmhResult.readAll(file)) {
            JsonNode params = record.params();
            String key = key(params.path("model").asText(), params.path("nsPrecision").asText());
            if (!BENCHMARK.equals(record.benchmark()) || key == null
                    || !params.path("optimizer").asText().equals("muon")) {
                continue;
            }
            out.put(key, new double[]{record.score(), record.error()});
        }
        return out;
    }

    /** "D/dtype" to the memory of every {@code block-D} Muon trial in a resident memory file (one JSON per line). */
    private static Map<String, Memory> readOurMemory(Path file) throws IOException {
        Map<String, Memory> out = new LinkedHashMap<>();
        for (String line : Files.readAllLines(file)) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode m = JSON.readTree(line);
            String key = key(m.path("model").asText(), m.path("nsPrecision").asText());
            if (key != null && m.path("optimizer").asText().equals("muon")) {
                out.put(key, Memory.of(m.path("before").asDouble(), m.path("after").asDouble(),
                        m.path("peak").asDouble()));
            }
        }
        return out;
    }

    /** "D/dtype" for a {@code block-D} model, else null. */
    private static String key(String model, String dtype) {
        return model.startsWith("block-") ? MuonStepBenchmark.blockWidth(model) + "/" + dtype : null;
    }
}
