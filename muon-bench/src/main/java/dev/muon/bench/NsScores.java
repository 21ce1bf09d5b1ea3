package dev.muon.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@link NewtonSchulzBenchmark} results of a JMH JSON file (read with Jackson), and the PyTorch peer's medians
 * ({@code muon-bench/peer/pytorch_peer.py}), as times relative to the {@code gemm} floor with their error margins.
 */
final class NsScores {
    private static final String BENCHMARK = NewtonSchulzBenchmark.class.getName() + ".orthogonalize";
    private static final ObjectMapper JSON = new ObjectMapper();

    private NsScores() {
    }

    /**
     * One measurement.
     *
     * @param dtype   {@code float32} or {@code bfloat16}
     * @param variant the benchmark's {@code variant} parameter ({@code gemm} is the floor)
     * @param shape   {@code ROWSxCOLS}
     * @param ms      the score, milliseconds per call
     * @param error   the half-width of JMH's 99.9% confidence interval, or 0 where JMH gave none (one iteration)
     */
    record Score(String dtype, String variant, String shape, double ms, double error) {
    }

    /**
     * A bar: a time over its floor, and the error of that ratio.
     *
     * @param ratio time / floor
     * @param error the ratio's error, both relative errors added in quadrature
     */
    record Ratio(double ratio, double error) {
        static Ratio of(double ms, double msError, Score floor) {
            double r = ms / floor.ms();
            double relative = Math.hypot(msError / ms, floor.error() / floor.ms());
            return new Ratio(r, r * relative);
        }
    }

    /** Every {@code NewtonSchulzBenchmark.orthogonalize} record of a JMH JSON result file, in file order. */
    static List<Score> readJmh(Path file) throws IOException {
        List<Score> out = new ArrayList<>();
        for (JmhResult record : JmhResult.readAll(file)) {
            if (!BENCHMARK.equals(record.benchmark())) {
                continue;
            }
            JsonNode params = record.params();
            out.add(new Score(params.path("dtype").asText(), params.path("variant").asText(),
                    params.path("shape").asText(), record.score(), record.error()));
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("no NewtonSchulzBenchmark results in " + file);
        }
        return out;
    }

    /**
     * The peer's per-dtype timing: {@code {"float32": {"median_ms", "min_ms", "max_ms"}, ...}} for one shape.
     *
     * @param median the median, ms
     * @param error  half the min-to-max range, ms (the peer reports no confidence interval)
     */
    record Peer(double median, double error) {
    }

    /**
     * The peer's timings by dtype at {@code shape}: from {@code pytorch_peer.py}'s output, whose {@code "ns"} object
     * holds {@code "SHAPE/dtype"} entries, or from a file of the older form, {@code {dtype: {...}}} for one shape.
     */
    static Map<String, Peer> readPeer(Path file, String shape) throws IOException {
        JsonNode root = JSON.readTree(file.toFile());
        Map<String, Peer> out = new LinkedHashMap<>();
        if (root != null) {
            boolean byShape = root.has("ns");
            JsonNode timings = byShape ? root.get("ns") : root;
            for (Map.Entry<String, JsonNode> e : timings.properties()) {
                String dtype = e.getKey();
                if (byShape) {
                    if (!dtype.startsWith(shape + "/")) {
                        continue;
                    }
                    dtype = dtype.substring(shape.length() + 1);
                }
                JsonNode t = e.getValue();
                if (t.has("median_ms") && t.has("min_ms") && t.has("max_ms")) {
                    out.put(dtype, new Peer(t.get("median_ms").asDouble(),
                            (t.get("max_ms").asDouble() - t.get("min_ms").asDouble()) / 2));
                }
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException(file + " holds no {dtype: {median_ms, min_ms, max_ms}} timings at " + shape);
        }
        return out;
    }

    /** The {@code gemm} score of a dtype and shape. */
    static Score floor(List<Score> scores, String dtype, String shape) {
        for (Score s : scores) {
            if (s.dtype().equals(dtype) && s.shape().equals(shape) && s.variant().equals("gemm")) {
                return s;
            }
        }
        throw new IllegalArgumentException("no 'gemm' floor for " + dtype + " " + shape + " to normalise by");
    }
}
