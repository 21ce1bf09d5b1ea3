package dev.muon.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One record of a JMH JSON result file (read with Jackson): what {@link NsScores} and {@link ScaleScores} take from
 * JMH's output.
 *
 * @param benchmark the benchmark method's full name
 * @param params    its {@code @Param} values (a missing node where it has none)
 * @param score     the primary score
 * @param error     the half-width of JMH's 99.9% confidence interval, or 0 where JMH gave none (one iteration)
 */
record JmhResult(String benchmark, JsonNode params, double score, double error) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * Every record of a JMH JSON result file, in file order.
     *
     * @param file the file
     * @return its records
     * @throws IOException              if the file cannot be read or parsed
     * @throws IllegalArgumentException if it is not an array of records
     */
    static List<JmhResult> readAll(Path file) throws IOException {
        JsonNode root = JSON.readTree(file.toFile());
        if (root == null || !root.isArray()) {
            throw new IllegalArgumentException(file + " is not a JMH JSON result (expected an array of records)");
        }
        List<JmhResult> out = new ArrayList<>();
        for (JsonNode record : root) {
            JsonNode metric = record.path("primaryMetric");
            // JMH writes "NaN" (a string) for the error of a single iteration: no margin known, drawn as none.
            double error = metric.path("scoreError").asDouble(Double.NaN);
            out.add(new JmhResult(record.path("benchmark").asText(), record.path("params"),
                    metric.path("score").asDouble(), Double.isFinite(error) ? error : 0));
        }
        return out;
    }
}
