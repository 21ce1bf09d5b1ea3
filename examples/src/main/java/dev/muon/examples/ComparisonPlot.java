package dev.muon.examples;

import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One figure for one model: test accuracy against epochs and against training seconds, and the training loss
 * against epochs, for each optimizer and learning rate. Lines are the mean over seeds; the shaded band spans the
 * lowest to the highest seed. The loss is smoothed with a centred moving average (a trailing one lags and bends the
 * curve where the window fills). Each curve ends in a label with its final value and, for MuonAdamW, the difference
 * to AdamW at the same lr; the note under the title gives the optimizer state of each.
 */
final class ComparisonPlot {
    /** Half-width of the centred loss window, in steps: about a tenth of an epoch of 117 to 234 steps. */
    private static final int HALF_WINDOW = 12;

    private ComparisonPlot() {
    }

    /** The runs of one optimizer at one lr, over seeds. */
    private record Group(String optimizer, double multiplier, double lr, List<FashionMnist.Result> runs) {
        boolean muon() {
            return optimizer.startsWith("Muon");
        }

        Color color() {
            boolean base = multiplier == 1.0;
            return muon() ? (base ? new Color(214, 90, 0) : new Color(160, 40, 120))
                    : (base ? new Color(30, 90, 200) : new Color(40, 160, 170));
        }
    }

    /**
     * Draws the figure.
     *
     * @param png           the file
     * @param title         the figure's title (the data set and model)
     * @param results       every run of the model: each optimizer, lr and seed
     * @param baseLr        the lr the multipliers are relative to
     * @param stepsPerEpoch steps per epoch, for the loss panel's x axis
     * @param secondsNote   what to say about the machine the seconds were measured on, or empty
     * @throws IOException if the file cannot be written
     */
    static void write(Path png, String title, List<FashionMnist.Result> results, double baseLr, long stepsPerEpoch,
                      String secondsNote) throws IOException {
        Map<String, Group> groups = new LinkedHashMap<>();
        for (FashionMnist.Result r : results) {
            groups.computeIfAbsent(r.optimizer() + "|" + r.lr(),
                    k -> new Group(r.optimizer(), r.lr() / baseLr, r.lr(), new ArrayList<>())).runs().add(r);
        }
        boolean oneLr = groups.values().stream().mapToDouble(Group::lr).distinct().count() == 1;
        int seeds = groups.values().iterator().next().runs().size();
        String band = seeds > 1 ? "mean of " + seeds + " seeds, band: lowest to highest" : "one seed";
        PanelFigure figure = new PanelFigure(title + (oneLr ? String.format(Locale.ROOT, ", lr %.0e", baseLr) : ""),
                band + "; in brackets: MuonAdamW less AdamW at the same lr; " + stateNote(groups)
                        + (secondsNote.isEmpty() ? "" : "; seconds: " + secondsNote));
        XYChart byEpoch = figure.panel("test accuracy by epoch", "epoch", "test accuracy, %", "0.#");
        XYChart bySeconds = figure.panel("test accuracy by training time", "training seconds (evaluation excluded)",
                "test accuracy, %", "0");
        XYChart loss = figure.panel("training loss, centred mean of " + (2 * HALF_WINDOW + 1) + " steps", "epoch",
                "training loss", "0.#");
        byEpoch.getStyler().setXAxisMin(0.5);
        loss.getStyler().setXAxisMin(0.0);
        // The first steps' loss (about ln 10) would squash the rest: the axis ends at half an epoch's.
        loss.getStyler().setYAxisMax(lossAxisTop(groups.values(), stepsPerEpoch));
        Map<Double, Double> adamWAccuracy = new LinkedHashMap<>();
        Map<Double, Double> adamWLoss = new LinkedHashMap<>();
        for (Group g : groups.values()) {
            String label = label(g, oneLr);
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
                secondsX[e] = SampleStats.mean(sec);
                mean[e] = SampleStats.mean(acc);
                low[e] = Arrays.stream(acc).min().orElseThrow();
                high[e] = Arrays.stream(acc).max().orElseThrow();
            }
            addWithBand(figure, byEpoch, g, label, epochX, mean, low, high);
            addWithBand(figure, bySeconds, g, label, secondsX, mean, low, high);
            double last = mean[epochs - 1];
            double[] smooth = meanLoss(g);
            double lastLoss = smooth[smooth.length - 1];
            double[] lossX = new double[smooth.length];
            for (int i = 0; i < lossX.length; i++) {
                lossX[i] = (i + 1) / (double) stepsPerEpoch;
            }
            figure.line(loss, label, lossX, smooth, g.color(), g.multiplier() != 1.0).setMarker(SeriesMarkers.NONE);
            String name = shortName(g, oneLr);
            if (g.muon() && adamWAccuracy.containsKey(g.lr())) {
                String delta = String.format(Locale.ROOT, " (%+.2f)", last - adamWAccuracy.get(g.lr()));
                String lossDelta = String.format(Locale.ROOT, " (%+.3f)", lastLoss - adamWLoss.get(g.lr()));
                figure.endLabel(byEpoch, epochs, last, String.format(Locale.ROOT, "%s %.2f%%", name, last) + delta);
                figure.endLabel(loss, lossX[lossX.length - 1], lastLoss,
                        String.format(Locale.ROOT, "%s %.3f", name, lastLoss) + lossDelta);
            } else {
                figure.endLabel(byEpoch, epochs, last, String.format(Locale.ROOT, "%s %.2f%%", name, last));
                figure.endLabel(loss, lossX[lossX.length - 1], lastLoss,
                        String.format(Locale.ROOT, "%s %.3f", name, lastLoss));
            }
            figure.endLabel(bySeconds, secondsX[epochs - 1], last,
                    String.format(Locale.ROOT, "%s %.0f s", name, secondsX[epochs - 1]));
            if (!g.muon()) {
                adamWAccuracy.put(g.lr(), last);
                adamWLoss.put(g.lr(), lastLoss);
            }
        }
        figure.write(png);
    }

    /** The largest smoothed loss after half of the first epoch, with a tenth more room. */
    private static double lossAxisTop(java.util.Collection<Group> groups, long stepsPerEpoch) {
        double top = 0;
        for (Group g : groups) {
            double[] smooth = meanLoss(g);
            int from = (int) Math.min(smooth.length - 1, Math.max(0, stepsPerEpoch / 2));
            for (int i = from; i < smooth.length; i++) {
                top = Math.max(top, smooth[i]);
            }
        }
        return Math.ceil(top * 1.1 * 10) / 10;
    }

    /** The legend's label: the optimizer, and the lr only when the figure has more than one. */
    private static String label(Group g, boolean oneLr) {
        return oneLr ? g.optimizer() : String.format(Locale.ROOT, "%s, lr %.0e (%s)", g.optimizer(), g.lr(),
                RunTables.multiple(g.multiplier()));
    }

    /** The end label's name: short, so that labels fit beside the curves. */
    private static String shortName(Group g, boolean oneLr) {
        String name = g.muon() ? "Muon" : "AdamW";
        return oneLr ? name : name + " " + RunTables.multiple(g.multiplier());
    }

    /** "optimizer state: MuonAdamW 1,089,616 B = 0.51 x AdamW's 2,154,576 B" */
    private static String stateNote(Map<String, Group> groups) {
        long adamW = 0;
        long muon = 0;
        for (Group g : groups.values()) {
            long bytes = g.runs().get(0).stateBytes();
            if (g.muon()) {
                muon = bytes;
            } else {
                adamW = bytes;
            }
        }
        if (adamW <= 0 || muon <= 0) {
            return "optimizer state not recorded";
        }
        return String.format(Locale.ROOT, "optimizer state: MuonAdamW %,d B = %.2f x AdamW's %,d B", muon,
                (double) muon / adamW, adamW);
    }

    private static void addWithBand(PanelFigure figure, XYChart chart, Group g, String label, double[] x,
                                    double[] mean, double[] low, double[] high) {
        if (g.runs().size() > 1) {
            figure.band(chart, label, x, low, high, g.color());
        }
        XYSeries line = figure.line(chart, label, x, mean, g.color(), g.multiplier() != 1.0);
        line.setMarker(SeriesMarkers.CIRCLE);
    }

    /** The training loss per step, averaged over the seeds, then smoothed. */
    private static double[] meanLoss(Group g) {
        int steps = g.runs().get(0).steps().size();
        double[] mean = new double[steps];
        for (FashionMnist.Result r : g.runs()) {
            for (int i = 0; i < steps; i++) {
                mean[i] += r.steps().get(i) / g.runs().size();
            }
        }
        return centredMean(mean, HALF_WINDOW);
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
}
