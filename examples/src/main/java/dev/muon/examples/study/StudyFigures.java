package dev.muon.examples.study;

import dev.muon.examples.DataError;
import dev.muon.examples.PanelFigure;
import dev.muon.examples.SampleStats;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The study's figures, per setting, drawn with {@link PanelFigure}: the lr sweeps as U-curves (final validation
 * loss against lr, both optimizers), and the validation loss against steps and against seconds at the best lrs,
 * AdamW against {@code MuonAdamW} and, where they ran, {@code MuonAdamW} against its variants. Lines are means over
 * the seeds; the shaded bands span the lowest to the highest seed; a grey line marks the target.
 */
final class StudyFigures {
    private StudyFigures() {
    }

    /** Each optimizer's colour, the same in every figure. */
    static Color color(StudyArm arm) {
        return switch (arm) {
            case ADAMW -> new Color(30, 90, 200);
            case MUON -> new Color(214, 90, 0);
            case NORMUON -> new Color(160, 40, 120);
            case CAUTIOUS_WD -> new Color(40, 160, 170);
            case BF16_MOMENTUM -> new Color(110, 110, 110);
            case HYPERBALL -> new Color(70, 150, 40);
        };
    }

    /**
     * Writes a setting's figures into a folder: {@code study-ID-lr.png}, {@code study-ID-curves.png} and, where
     * variants ran, {@code study-ID-variants.png}.
     *
     * @param a      the setting's analysis
     * @param times  the timing pass's times per step, or null (the seconds then come from the sweep's own runs)
     * @param folder the folder
     * @return the files written
     * @throws DataError naming a file that cannot be written
     */
    static List<Path> write(StudyAnalysis.SettingAnalysis a, Map<StudyArm, StudyTiming.StepTime> times,
                            Path folder) {
        System.setProperty("java.awt.headless", "true");
        List<Path> out = new ArrayList<>();
        String id = a.setting().id();
        Path current = folder.resolve("study-" + id + "-lr.png");
        try {
            lrFigure(a, current);
            out.add(current);
            List<StudyAnalysis.Row> main = a.rows().stream().filter(r -> !r.config().arm().variant()).toList();
            current = folder.resolve("study-" + id + "-curves.png");
            curves(a, main, times, current, "AdamW against MuonAdamW at their best lrs");
            out.add(current);
            List<StudyAnalysis.Row> variants = a.rows().stream().filter(r -> r.config().arm().muon()).toList();
            if (variants.size() > 1) {
                current = folder.resolve("study-" + id + "-variants.png");
                curves(a, variants, times, current, "MuonAdamW against its variants at the best lrs");
                out.add(current);
            }
        } catch (IOException e) {
            throw new DataError(current + ": cannot write it (" + DataError.reason(e) + ")", e);
        }
        return out;
    }

    /**
     * Final validation loss against lr, both sweeps. The x axis is log10 of the lr on a linear scale: XChart's own
     * log axis labels only powers of ten, which a grid of factors of 2 may not reach.
     */
    private static void lrFigure(StudyAnalysis.SettingAnalysis a, Path png) throws IOException {
        int seeds = a.adamwSweep().values().iterator().next().runs().size();
        PanelFigure figure = new PanelFigure(String.format(Locale.ROOT, "lr sweeps (d = %d, batch %d)",
                a.setting().width(), a.setting().batch()), "mean of " + seeds + " seeds, band: lowest to highest; "
                + "Muon's AdamW side at " + StudyCell.lr(a.bestAdamwLr()));
        XYChart panel = figure.panel("final validation loss by lr", "log10 of the lr (-3 is 1e-3; Muon's in AdamW's "
                + "units)", "final validation loss", "0.0");
        sweepLine(figure, panel, "AdamW (lr)", a.adamwSweep(), color(StudyArm.ADAMW));
        if (!a.muonSweep().isEmpty()) {
            sweepLine(figure, panel, "MuonAdamW (Muon lr)", a.muonSweep(), color(StudyArm.MUON));
        }
        figure.write(png);
    }

    private static void sweepLine(PanelFigure figure, XYChart panel, String label,
                                  Map<Double, StudyAnalysis.Config> sweep, Color color) {
        List<double[]> points = new ArrayList<>();
        sweep.forEach((lr, c) -> {
            double[] finals = c.finals();
            // A diverged lr has no loss to draw; the report's table lists it.
            if (java.util.Arrays.stream(finals).allMatch(Double::isFinite)) {
                points.add(new double[] {Math.log10(lr), SampleStats.mean(finals),
                    java.util.Arrays.stream(finals).min().orElseThrow(),
                    java.util.Arrays.stream(finals).max().orElseThrow()});
            }
        });
        if (points.isEmpty()) {
            return;
        }
        double[] x = points.stream().mapToDouble(p -> p[0]).toArray();
        figure.band(panel, label, x, points.stream().mapToDouble(p -> p[2]).toArray(),
                points.stream().mapToDouble(p -> p[3]).toArray(), color);
        XYSeries line = figure.line(panel, label, x, points.stream().mapToDouble(p -> p[1]).toArray(), color, false);
        line.setMarker(SeriesMarkers.CIRCLE);
    }

    /** Validation loss against steps and against seconds, with seed bands and the target. */
    private static void curves(StudyAnalysis.SettingAnalysis a, List<StudyAnalysis.Row> rows,
                               Map<StudyArm, StudyTiming.StepTime> times, Path png, String what) throws IOException {
        boolean timed = times != null && rows.stream().allMatch(r -> times.containsKey(r.config().arm()));
        PanelFigure figure = new PanelFigure("MuonStudy: " + what, a.setting().title() + "; mean of "
                + rows.get(0).config().runs().size() + " seeds, band: min to max; (...) less "
                + rows.get(0).config().label() + "; grey: target " + String.format(Locale.ROOT, "%.3f", a.target())
                + "; seconds: " + (timed ? "steps x timed ms/step" : "the sweep's own (no timing pass)"));
        XYChart bySteps = figure.panel("validation loss by step", "step", "validation loss", "0");
        XYChart bySeconds = figure.panel("validation loss by training time", "training seconds (evaluation "
                + "excluded)", "validation loss", "0");
        bySteps.getStyler().setXAxisMin(0.0);
        bySeconds.getStyler().setXAxisMin(0.0);
        double maxSeconds = 0;
        double baseline = rows.get(0).finalInterval().mean();
        // The first tenth of a run falls steeply from about ln(vocabulary): the axis ends at the highest curve's
        // value there, so that the part where the curves cross the target is not squashed.
        int tenth = Math.max(1, a.setting().evals() / 10);
        double top = 0;
        for (StudyAnalysis.Row r : rows) {
            StudyAnalysis.Config c = r.config();
            int[] steps = c.runs().get(0).evalSteps();
            // Step 0 (about ln of the vocabulary) would squash the rest of the curves.
            int n = steps.length - 1;
            double[] x = new double[n];
            double[] seconds = new double[n];
            double[] mean = new double[n];
            double[] low = new double[n];
            double[] high = new double[n];
            for (int k = 1; k <= n; k++) {
                double[] values = new double[c.runs().size()];
                double[] secs = new double[c.runs().size()];
                for (int i = 0; i < values.length; i++) {
                    values[i] = c.runs().get(i).valLoss()[k];
                    secs[i] = c.runs().get(i).trainSeconds()[k];
                }
                x[k - 1] = steps[k];
                seconds[k - 1] = timed ? steps[k] * times.get(c.arm()).interval().mean() / 1000
                        : SampleStats.mean(secs);
                mean[k - 1] = SampleStats.mean(values);
                low[k - 1] = java.util.Arrays.stream(values).min().orElseThrow();
                high[k - 1] = java.util.Arrays.stream(values).max().orElseThrow();
            }
            int finite = 0;
            while (finite < n && Double.isFinite(mean[finite]) && Double.isFinite(seconds[finite])) {
                finite++;
            }
            if (finite >= tenth) {
                top = Math.max(top, mean[tenth - 1]);
            }
            if (finite == 0) {
                continue;
            }
            double[] fx = java.util.Arrays.copyOf(x, finite);
            double[] fs = java.util.Arrays.copyOf(seconds, finite);
            double[] fm = java.util.Arrays.copyOf(mean, finite);
            double[] fl = java.util.Arrays.copyOf(low, finite);
            double[] fh = java.util.Arrays.copyOf(high, finite);
            String label = c.label();
            Color color = color(c.arm());
            boolean dashed = c.arm() == StudyArm.HYPERBALL && c.muonLr() != a.bestMuonLr();
            if (c.runs().size() > 1) {
                figure.band(bySteps, label, fx, fl, fh, color);
                figure.band(bySeconds, label, fs, fl, fh, color);
            }
            figure.line(bySteps, label, fx, fm, color, dashed).setMarker(SeriesMarkers.NONE);
            figure.line(bySeconds, label, fs, fm, color, dashed).setMarker(SeriesMarkers.NONE);
            double last = fm[finite - 1];
            String name = c.arm() == StudyArm.HYPERBALL ? "Hyperball " + StudyCell.lr(c.muonLr()) : c.arm().label();
            String delta = r == rows.get(0) ? "" : String.format(Locale.ROOT, " (%+.3f)", last - baseline);
            figure.endLabel(bySteps, fx[finite - 1], last, String.format(Locale.ROOT, "%s %.3f", name, last) + delta);
            figure.endLabel(bySeconds, fs[finite - 1], last, String.format(Locale.ROOT, "%s %.0f s", name,
                    fs[finite - 1]));
            maxSeconds = Math.max(maxSeconds, fs[finite - 1]);
        }
        if (top > a.target()) {
            double axisTop = Math.ceil(top * 10) / 10;
            bySteps.getStyler().setYAxisMax(axisTop);
            bySeconds.getStyler().setYAxisMax(axisTop);
        }
        Color grey = new Color(150, 150, 150);
        figure.line(bySteps, "target", new double[] {0, a.setting().steps()}, new double[] {a.target(), a.target()},
                grey, true).setMarker(SeriesMarkers.NONE);
        figure.line(bySeconds, "target", new double[] {0, maxSeconds}, new double[] {a.target(), a.target()}, grey,
                true).setMarker(SeriesMarkers.NONE);
        figure.write(png);
    }
}
