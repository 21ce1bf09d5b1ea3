package dev.muon.examples;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The training-loss curves of several runs of one model: written as a CSV of every step and as a PNG with one
 * smoothed curve per optimizer.
 */
final class LossCurves {
    // A moving average over this many steps: per-batch losses are too noisy to compare optimizers by eye.
    private static final int SMOOTHING = 25;

    private final String model;
    private final Map<String, List<Double>> byOptimizer = new LinkedHashMap<>();
    private final int stepsPerEpoch;

    LossCurves(String model, int stepsPerEpoch) {
        this.model = model;
        this.stepsPerEpoch = stepsPerEpoch;
    }

    /** The list that a run appends its per-step losses to. */
    List<Double> run(String optimizer) {
        return byOptimizer.computeIfAbsent(optimizer, k -> new ArrayList<>());
    }

    /** Appends {@code model,optimizer,step,epoch,loss} rows, writing the header when the file is new. */
    void appendCsv(Path csv) {
        StringBuilder rows = new StringBuilder();
        if (!Files.exists(csv)) {
            rows.append("model,optimizer,step,epoch,loss\n");
        }
        for (Map.Entry<String, List<Double>> e : byOptimizer.entrySet()) {
            List<Double> losses = e.getValue();
            for (int i = 0; i < losses.size(); i++) {
                rows.append(String.format(Locale.ROOT, "%s,%s,%d,%d,%.6f%n", model, e.getKey(), i + 1,
                        i / stepsPerEpoch + 1, losses.get(i)));
            }
        }
        try {
            Files.writeString(csv, rows, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + csv, e);
        }
    }

    /** Draws the smoothed curves into a PNG. */
    void writePng(Path png, String title) {
        XYChart chart = new XYChartBuilder().width(800).height(480).title(title)
                .xAxisTitle("step (batches of training)")
                .yAxisTitle("training loss, moving average of " + SMOOTHING + " steps").build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        for (Map.Entry<String, List<Double>> e : byOptimizer.entrySet()) {
            List<Double> losses = e.getValue();
            if (losses.isEmpty()) {
                continue;
            }
            double[] x = new double[losses.size()];
            double[] y = new double[losses.size()];
            double window = 0;
            for (int i = 0; i < losses.size(); i++) {
                window += losses.get(i);
                if (i >= SMOOTHING) {
                    window -= losses.get(i - SMOOTHING);
                }
                x[i] = i + 1;
                y[i] = window / Math.min(i + 1, SMOOTHING);
            }
            chart.addSeries(e.getKey(), x, y).setMarker(SeriesMarkers.NONE);
        }
        try {
            BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + png, e);
        }
    }
}
