package dev.muon.examples;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

import javax.imageio.ImageIO;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One figure for one model: test accuracy against epochs and against training seconds, and the training loss
 * against steps, for each optimizer and learning rate. Lines are the mean over seeds; the shaded band spans the
 * lowest to the highest seed. The loss is smoothed with a centred moving average (a trailing one lags and bends the
 * curve where the window fills).
 */
final class ComparisonPlot {
    private static final int WIDTH = 620;
    private static final int HEIGHT = 460;
    /** Half-width of the centred loss window, in steps: about a tenth of an epoch of 234 steps. */
    private static final int HALF_WINDOW = 12;

    private ComparisonPlot() {
    }

    /** The runs of one optimizer at one lr, over seeds. */
    private record Group(String optimizer, double multiplier, List<FashionMnist.Result> runs) {
        String label() {
            return optimizer + " lr " + RunTables.multiple(multiplier);
        }

        Color color(int alpha) {
            boolean muon = optimizer.startsWith("Muon");
            boolean base = multiplier == 1.0;
            Color c = muon ? (base ? new Color(214, 90, 0) : new Color(160, 40, 120))
                    : (base ? new Color(30, 90, 200) : new Color(40, 160, 170));
            return new Color(c.getRed(), c.getGreen(), c.getBlue(), alpha);
        }
    }

    static void write(Path png, String title, List<FashionMnist.Result> results, double baseLr, long stepsPerEpoch)
            throws IOException {
        Map<String, Group> groups = new LinkedHashMap<>();
        for (FashionMnist.Result r : results) {
            double multiplier = r.lr() / baseLr;
            groups.computeIfAbsent(r.optimizer() + "|" + r.lr(),
                    k -> new Group(r.optimizer(), multiplier, new ArrayList<>())).runs().add(r);
        }
        int seeds = groups.values().iterator().next().runs().size();
        String band = seeds > 1 ? "mean of " + seeds + " seeds, band: min to max" : "one seed";
        XYChart byEpoch = chart("test accuracy by epoch (" + band + ")", "epoch", "test accuracy, %");
        XYChart bySeconds = chart("test accuracy by training time", "training seconds (evaluation excluded)",
                "test accuracy, %");
        XYChart loss = chart("training loss, centred mean of " + (2 * HALF_WINDOW + 1) + " steps",
                "step (" + stepsPerEpoch + " per epoch)", "training loss");
        for (Group g : groups.values()) {
            int epochs = g.runs().get(0).epochs().size();
            double[] epochX = new double[epochs];
            double[] secondsX = new double[epochs];
            double[] mean = new double[epochs];
            double[] low = new double[epochs];
            double[] high = new double[epochs];
            for (int e = 0; e < epochs; e++) {
                double[] acc = new double[g.runs().size()];
                double[] sec = new double[g.runs().size()];
                for (int i = 0; i < acc.length; i++) {
                    acc[i] = 100 * g.runs().get(i).epochs().get(e).accuracy();
                    sec[i] = g.runs().get(i).epochs().get(e).seconds();
                }
                epochX[e] = e + 1;
                secondsX[e] = RunTables.mean(sec);
                mean[e] = RunTables.mean(acc);
                low[e] = java.util.Arrays.stream(acc).min().orElseThrow();
                high[e] = java.util.Arrays.stream(acc).max().orElseThrow();
            }
            addWithBand(byEpoch, g, epochX, mean, low, high);
            addWithBand(bySeconds, g, secondsX, mean, low, high);
            addLoss(loss, g);
        }
        BufferedImage image = new BufferedImage(3 * WIDTH, HEIGHT + 40, BufferedImage.TYPE_INT_RGB);
        Graphics2D g2 = image.createGraphics();
        g2.setColor(Color.WHITE);
        g2.fillRect(0, 0, image.getWidth(), image.getHeight());
        g2.setColor(Color.BLACK);
        g2.setFont(g2.getFont().deriveFont(java.awt.Font.BOLD, 18f));
        g2.drawString(title, 20, 27);
        int x = 0;
        for (XYChart chart : List.of(byEpoch, bySeconds, loss)) {
            g2.drawImage(BitmapEncoder.getBufferedImage(chart), x, 40, null);
            x += WIDTH;
        }
        g2.dispose();
        ImageIO.write(image, "png", png.toFile());
    }

    private static XYChart chart(String title, String xTitle, String yTitle) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title).xAxisTitle(xTitle)
                .yAxisTitle(yTitle).build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideSE);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotBackgroundColor(Color.WHITE);
        return chart;
    }

    private static void addWithBand(XYChart chart, Group g, double[] x, double[] mean, double[] low, double[] high) {
        if (g.runs().size() > 1) {
            // The band as one closed polygon: along the highs, back along the lows.
            int n = x.length;
            double[] px = new double[2 * n];
            double[] py = new double[2 * n];
            for (int i = 0; i < n; i++) {
                px[i] = x[i];
                py[i] = high[i];
                px[2 * n - 1 - i] = x[i];
                py[2 * n - 1 - i] = low[i];
            }
            XYSeries band = chart.addSeries(g.label() + " band", px, py);
            band.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.PolygonArea);
            band.setFillColor(g.color(55));
            band.setLineColor(g.color(0));
            band.setMarker(SeriesMarkers.NONE);
            band.setShowInLegend(false);
        }
        XYSeries line = chart.addSeries(g.label(), x, mean);
        style(line, g);
        line.setMarker(SeriesMarkers.CIRCLE);
        line.setMarkerColor(g.color(255));
    }

    private static void addLoss(XYChart chart, Group g) {
        int steps = g.runs().get(0).steps().size();
        double[] mean = new double[steps];
        for (FashionMnist.Result r : g.runs()) {
            for (int i = 0; i < steps; i++) {
                mean[i] += r.steps().get(i) / g.runs().size();
            }
        }
        double[] x = new double[steps];
        double[] smooth = centredMean(mean, HALF_WINDOW);
        for (int i = 0; i < steps; i++) {
            x[i] = i + 1;
        }
        XYSeries line = chart.addSeries(g.label(), x, smooth);
        style(line, g);
        line.setMarker(SeriesMarkers.NONE);
    }

    /** A moving average centred on each step; near the ends the window shrinks symmetrically, so nothing lags. */
    static double[] centredMean(double[] values, int halfWindow) {
        double[] out = new double[values.length];
        for (int i = 0; i < values.length; i++) {
            int h = Math.min(halfWindow, Math.min(i, values.length - 1 - i));
            double sum = 0;
            for (int j = i - h; j <= i + h; j++) {
                sum += values[j];
            }
            out[i] = sum / (2 * h + 1);
        }
        return out;
    }

    private static void style(XYSeries line, Group g) {
        line.setLineColor(g.color(255));
        line.setLineWidth(2f);
        line.setLineStyle(g.multiplier() == 1.0 ? SeriesLines.SOLID : SeriesLines.DASH_DASH);
    }
}
