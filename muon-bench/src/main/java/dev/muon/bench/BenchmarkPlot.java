package dev.muon.bench;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Draws {@code docs/benchmarks.md}'s plot from a JMH JSON result of {@link NewtonSchulzBenchmark}: for each shape,
 * one bar per variant showing its time relative to the {@code gemm} floor of the same shape and dtype (shapes span
 * two orders of magnitude in time, so ratios read better than milliseconds), one chart per dtype.
 *
 * <p>How to run: {@code java -cp muon-bench/target/benchmarks.jar dev.muon.bench.BenchmarkPlot ns.json
 * docs/ns-benchmark} (writes {@code docs/ns-benchmark-float32.png} and {@code -bfloat16.png}).
 */
public final class BenchmarkPlot {
    // JMH's JSON is regular enough that a pattern per result record is simpler than a JSON library here.
    private static final Pattern RECORD = Pattern.compile(
            "\"benchmark\"\\s*:\\s*\"[^\"]*NewtonSchulzBenchmark\\.orthogonalize\".*?"
                    + "\"params\"\\s*:\\s*\\{(.*?)\\}.*?\"primaryMetric\"\\s*:\\s*\\{\\s*\"score\"\\s*:\\s*([0-9.eE+-]+)",
            Pattern.DOTALL);
    private static final Pattern PARAM = Pattern.compile("\"(\\w+)\"\\s*:\\s*\"([^\"]*)\"");

    private BenchmarkPlot() {
    }

    /**
     * Reads the JSON and writes one PNG per dtype.
     *
     * @param args the JMH JSON file and the output prefix
     * @throws IOException if a file cannot be read or written
     */
    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: BenchmarkPlot <jmh.json> <output-prefix>, got "
                    + args.length + " arguments");
        }
        String json = Files.readString(Path.of(args[0]), StandardCharsets.UTF_8);
        // dtype -> variant -> shape -> ms
        Map<String, Map<String, Map<String, Double>>> scores = new LinkedHashMap<>();
        Matcher m = RECORD.matcher(json);
        while (m.find()) {
            Map<String, String> params = new LinkedHashMap<>();
            Matcher p = PARAM.matcher(m.group(1));
            while (p.find()) {
                params.put(p.group(1), p.group(2));
            }
            scores.computeIfAbsent(params.get("dtype"), k -> new LinkedHashMap<>())
                    .computeIfAbsent(params.get("variant"), k -> new LinkedHashMap<>())
                    .put(params.get("shape"), Double.parseDouble(m.group(2)));
        }
        if (scores.isEmpty()) {
            throw new IllegalStateException("no NewtonSchulzBenchmark results in " + args[0]);
        }
        for (Map.Entry<String, Map<String, Map<String, Double>>> dtype : scores.entrySet()) {
            Map<String, Double> floor = dtype.getValue().get("gemm");
            if (floor == null) {
                throw new IllegalStateException("no 'gemm' variant for " + dtype.getKey() + " to normalise by");
            }
            CategoryChart chart = new CategoryChartBuilder().width(1100).height(560)
                    .title("Newton-Schulz, 5 steps, " + dtype.getKey() + ": time / its GEMM floor (lower is better)")
                    .xAxisTitle("shape").yAxisTitle("time relative to the 3 GEMMs per step alone").build();
            chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
            for (Map.Entry<String, Map<String, Double>> variant : dtype.getValue().entrySet()) {
                // Every series over the floor's shapes, a gap where a variant was not run: XChart places a
                // category series' values by position, so a shorter list would draw bars over the wrong shapes.
                List<String> shapes = new ArrayList<>(floor.keySet());
                List<Double> ratios = new ArrayList<>();
                for (String shape : shapes) {
                    Double score = variant.getValue().get(shape);
                    ratios.add(score == null ? null : score / floor.get(shape));
                }
                chart.addSeries(variant.getKey(), shapes, ratios);
            }
            String out = args[1] + "-" + dtype.getKey() + ".png";
            BitmapEncoder.saveBitmap(chart, out, BitmapEncoder.BitmapFormat.PNG);
            System.out.println("wrote " + out);
        }
    }
}
