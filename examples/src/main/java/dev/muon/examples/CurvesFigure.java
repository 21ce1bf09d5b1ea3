package dev.muon.examples;

import org.knowm.xchart.XYChart;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@link TinyGpt}'s figure: validation loss against steps (left) and against training seconds (right), one line
 * per optimizer, each ending in a label with its final loss and, for the second run, the difference to the first.
 */
final class CurvesFigure {
    private static final List<Color> COLORS = List.of(new Color(30, 90, 200), new Color(214, 90, 0));

    private CurvesFigure() {
    }

    /**
     * Draws the figure.
     *
     * @param runs        the baseline run, then the one compared with it
     * @param png         the file
     * @param title       the figure's title
     * @param secondsNote what to say about the machine the seconds were measured on, or empty
     * @throws IOException if the file cannot be written
     */
    static void write(List<TinyGpt.Run> runs, Path png, String title, String secondsNote) throws IOException {
        PanelFigure figure = new PanelFigure(title, "validation loss in nats per character (lower is better), one "
                + "seed, step 0 left out; in brackets: " + runs.get(1).name() + " less " + runs.get(0).name()
                + (secondsNote.isEmpty() ? "" : "; seconds: " + secondsNote));
        XYChart bySteps = figure.panel("validation loss by step", "step", "validation loss", "0");
        XYChart bySeconds = figure.panel("validation loss by training time", "training seconds (evaluation excluded)",
                "validation loss", "0");
        bySteps.getStyler().setXAxisMin(0.0);
        bySeconds.getStyler().setXAxisMin(0.0);
        double baseline = runs.get(0).last().valLoss();
        for (int r = 0; r < runs.size(); r++) {
            TinyGpt.Run run = runs.get(r);
            List<Double> steps = new ArrayList<>();
            List<Double> seconds = new ArrayList<>();
            List<Double> loss = new ArrayList<>();
            // The loss at step 0 (about ln of the vocabulary) would squash the interesting part of the curve.
            for (TinyGpt.Point p : run.points()) {
                if (p.step() > 0) {
                    steps.add((double) p.step());
                    seconds.add(p.seconds());
                    loss.add(p.valLoss());
                }
            }
            Color color = COLORS.get(r % COLORS.size());
            double[] y = loss.stream().mapToDouble(Double::doubleValue).toArray();
            figure.line(bySteps, run.name(), steps.stream().mapToDouble(Double::doubleValue).toArray(), y, color,
                    false).setMarker(SeriesMarkers.NONE);
            figure.line(bySeconds, run.name(), seconds.stream().mapToDouble(Double::doubleValue).toArray(), y,
                    color, false).setMarker(SeriesMarkers.NONE);
            TinyGpt.Point last = run.last();
            String delta = r == 0 ? "" : String.format(Locale.ROOT, " (%+.3f)", last.valLoss() - baseline);
            figure.endLabel(bySteps, last.step(), last.valLoss(),
                    String.format(Locale.ROOT, "%s %.3f", run.name(), last.valLoss()) + delta);
            figure.endLabel(bySeconds, last.seconds(), last.valLoss(),
                    String.format(Locale.ROOT, "%s %.0f s", run.name(), last.seconds()));
        }
        figure.write(png);
    }
}
