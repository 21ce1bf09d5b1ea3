package dev.muon.examples;

import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVPrinter;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Writes {@link TinyGpt}'s validation curves: a CSV with one row per evaluation, and a PNG with validation loss
 * against steps (left) and against training seconds (right), one line per optimizer.
 */
final class TinyGptCurves {
    private TinyGptCurves() {
    }

    /**
     * Writes {@code <prefix>.csv} and {@code <prefix>.png}.
     *
     * @param runs   the runs to draw
     * @param prefix the path of both files without the extension; its directory is created
     * @throws UncheckedIOException if a file cannot be written
     */
    static void write(List<TinyGpt.Run> runs, Path prefix) {
        // Headless, so that the example also draws on a server or in CI without a display.
        System.setProperty("java.awt.headless", "true");
        try {
            Path dir = prefix.toAbsolutePath().getParent();
            Files.createDirectories(dir);
            try (CSVPrinter csv = new CSVPrinter(Files.newBufferedWriter(Path.of(prefix + ".csv")),
                    CSVFormat.DEFAULT.builder().setHeader("optimizer", "step", "train_seconds", "train_loss",
                            "val_loss").get())) {
                for (TinyGpt.Run run : runs) {
                    for (TinyGpt.Point p : run.points()) {
                        csv.printRecord(run.name(), p.step(), String.format(Locale.ROOT, "%.3f", p.seconds()),
                                String.format(Locale.ROOT, "%.5f", p.trainLoss()),
                                String.format(Locale.ROOT, "%.5f", p.valLoss()));
                    }
                }
            }
            List<XYChart> charts = List.of(chart(runs, "step", false), chart(runs, "training seconds", true));
            BitmapEncoder.saveBitmap(charts, 1, 2, prefix + ".png", BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + prefix + ".csv/.png", e);
        }
    }

    private static XYChart chart(List<TinyGpt.Run> runs, String xTitle, boolean bySeconds) {
        XYChart chart = new XYChartBuilder().width(640).height(420)
                .title("validation loss by " + xTitle).xAxisTitle(xTitle).yAxisTitle("validation loss (nats/char)")
                .build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setMarkerSize(4);
        for (TinyGpt.Run run : runs) {
            List<Double> x = new ArrayList<>();
            List<Double> y = new ArrayList<>();
            // The loss at step 0 (about ln 65) would squash the interesting part of the curve.
            for (TinyGpt.Point p : run.points()) {
                if (p.step() > 0) {
                    x.add(bySeconds ? p.seconds() : p.step());
                    y.add(p.valLoss());
                }
            }
            XYSeries series = chart.addSeries(run.name(), x, y);
            series.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        }
        return chart;
    }
}
