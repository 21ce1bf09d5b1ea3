package dev.muon.bench;

import org.knowm.xchart.AnnotationText;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * The scale curve of {@code docs/benchmarks.md}: one transformer block's Muon step at each width, ours against
 * PyTorch's, as a Markdown table (times, ratio, resident memory) and a log-log figure (both optimizers in each dtype,
 * each point's ratio written beside ours), from {@link ScaleScores}' inputs.
 *
 * <p>How to run: {@code muon-bench/peer/scale_curve.sh} runs both sides and then this; alone ({@code --help} lists
 * the options):
 * <pre>
 * java -Djava.awt.headless=true -cp muon-bench/target/benchmarks.jar dev.muon.bench.ScaleCurvePlot \
 *     scale/ours.json scale/scale-curve --ours-memory scale/ours-memory.jsonl --peer scale/peer-*.json
 * </pre>
 * writes {@code scale/scale-curve.md} and {@code scale/scale-curve.png}.
 */
@Command(name = "ScaleCurvePlot", mixinStandardHelpOptions = true,
        description = "Writes the scale curve's table (Markdown) and log-log figure (PNG).")
public final class ScaleCurvePlot implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "JMH_JSON", description = "MuonStepBenchmark's JSON result (block-D sets)")
    Path ours;

    @Parameters(index = "1", paramLabel = "PREFIX", description = "output prefix; writes PREFIX.md and PREFIX.png")
    String prefix;

    @Option(names = "--ours-memory", paramLabel = "JSONL",
            description = "our resident memory lines (-Dmuon.bench.residentOut)")
    Path oursMemory;

    @Option(names = "--peer", paramLabel = "JSON", required = true,
            description = "pytorch_peer.py --block output; repeat for every run, the fastest counts")
    List<Path> peers = new ArrayList<>();

    @Option(names = "--title", defaultValue = "", description = "appended to the figure's title (e.g. the CPU)")
    String title;

    /**
     * Parses the command line and writes the table and the figure.
     *
     * @param args see {@code --help}
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new ScaleCurvePlot()).execute(args));
    }

    @Override
    public Integer call() throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<ScaleScores.Point> points = ScaleScores.read(ours, oursMemory, peers);
        Path table = Path.of(prefix + ".md");
        Files.writeString(table, table(points));
        System.out.print(table(points));
        BitmapEncoder.saveBitmap(chart(points, title), prefix + ".png", BitmapEncoder.BitmapFormat.PNG);
        System.out.println("wrote " + table.toAbsolutePath() + " and " + Path.of(prefix + ".png").toAbsolutePath());
        return 0;
    }

    /** The Markdown table, one row per point. */
    static String table(List<ScaleScores.Point> points) {
        StringBuilder out = new StringBuilder("| width | NS dtype | ours, ms | PyTorch, ms | PyTorch / ours "
                + "| ours, MiB held / peak | PyTorch, MiB held / peak | PyTorch's run |\n"
                + "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
        for (ScaleScores.Point p : points) {
            out.append(String.format(Locale.ROOT, "| %d | %s | %.1f ± %.1f | %.1f | **%.2f×** | %s | %s | %s |%n",
                    p.width(), p.dtype(), p.oursMs(), p.oursError(), p.peerMs(), p.ratio(), mib(p.oursMib()),
                    mib(p.peerMib()), p.peerRun()));
        }
        return out.toString();
    }

    private static String mib(ScaleScores.Memory m) {
        return Double.isNaN(m.held()) ? "—" : String.format(Locale.ROOT, "%.0f / %.0f", m.held(), m.peak());
    }

    private static XYChart chart(List<ScaleScores.Point> points, String title) {
        XYChart chart = new XYChartBuilder().width(1200).height(750)
                .title("Muon step, one transformer block" + (title.isEmpty() ? "" : ": " + title))
                .xAxisTitle("model width d (log); the block's matrices: attention 4·d², MLP 8·d²")
                .yAxisTitle("ms per step (log)").build();
        chart.getStyler().setXAxisLogarithmic(true);
        chart.getStyler().setYAxisLogarithmic(true);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        // A margin around the widths, whole numbers at the axis's ends.
        chart.getStyler().setXAxisMin(points.stream().mapToDouble(ScaleScores.Point::width).min().orElse(1) * 0.9);
        chart.getStyler().setXAxisMax(points.stream().mapToDouble(ScaleScores.Point::width).max().orElse(1) * 1.1);
        chart.getStyler().setXAxisDecimalPattern("#");
        Set<String> dtypes = new LinkedHashSet<>();
        points.forEach(p -> dtypes.add(p.dtype()));
        for (String dtype : dtypes) {
            List<Double> widths = new ArrayList<>();
            List<Double> oursMs = new ArrayList<>();
            List<Double> peerMs = new ArrayList<>();
            for (ScaleScores.Point p : points) {
                if (p.dtype().equals(dtype)) {
                    widths.add((double) p.width());
                    oursMs.add(p.oursMs());
                    peerMs.add(p.peerMs());
                }
            }
            chart.addSeries("ours, " + dtype, widths, oursMs).setMarker(SeriesMarkers.CIRCLE);
            chart.addSeries("PyTorch, " + dtype, widths, peerMs).setMarker(SeriesMarkers.DIAMOND);
        }
        // Each point's two times joined by a dashed segment, labelled halfway (on the log scale) with the width (the
        // log axis may show no tick inside a narrow range), the dtype and the ratio; the dtypes' segments sit a
        // little apart so that they do not overlap.
        List<String> order = new ArrayList<>(dtypes);
        for (ScaleScores.Point p : points) {
            double x = p.width() * (1 + 0.015 * (2 * order.indexOf(p.dtype()) - 1));
            XYSeries pair = chart.addSeries(p.dtype() + " " + p.width(), new double[]{x, x},
                    new double[]{p.oursMs(), p.peerMs()});
            pair.setMarker(SeriesMarkers.NONE);
            pair.setLineColor(Color.GRAY);
            pair.setLineStyle(SeriesLines.DASH_DASH);
            pair.setShowInLegend(false);
            String label = String.format(Locale.ROOT, "d=%d %s %.2f×", p.width(), p.dtype(), p.ratio());
            chart.addAnnotation(new AnnotationText(label, x, Math.sqrt(p.oursMs() * p.peerMs()), false));
        }
        return chart;
    }
}
