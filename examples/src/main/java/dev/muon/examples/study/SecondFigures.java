package dev.muon.examples.study;

import dev.muon.examples.DataError;
import dev.muon.examples.PanelFigure;
import dev.muon.examples.SampleStats;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The second study's figures, drawn from the same confirmation runs and comparisons as {@link SecondAnalysis}'s
 * report: the validation loss against steps of AdamW, AdamW-2lr and {@code MuonAdamW} at each stage (the mean over
 * the confirmation seeds, the band their lowest to highest, the stage's target in grey), and each planned
 * comparison's ratio of steps to the target with its 95 % interval. A stage or comparison whose runs are not all
 * there is left out, so the figures can be drawn at any point of the sweep.
 */
final class SecondFigures {
    /** The curves' file in the results folder. */
    static final String CURVES = "second-study-curves.png";
    /** The ratios' file in the results folder. */
    static final String RATIOS = "second-study-ratios.png";
    /** The arms whose curves are drawn: the comparison the study is about, and its control. */
    private static final List<SecondArm> CURVE_ARMS = List.of(SecondArm.ADAMW, SecondArm.ADAMW_2LR, SecondArm.MUON);
    private static final Color GREY = new Color(150, 150, 150);

    private SecondFigures() {
    }

    /**
     * Writes the figures whose runs are there into a folder.
     *
     * @param results the results file's runs
     * @param folder  the folder
     * @return the files written: none before any confirmation run, the curves once a stage has one arm's, the ratios
     *         once a comparison is ready
     * @throws DataError naming a file that cannot be written
     */
    static List<Path> write(List<SecondResult> results, Path folder) {
        System.setProperty("java.awt.headless", "true");
        List<SecondAnalysis.StageRuns> stages = SecondAnalysis.stages(results);
        List<Path> out = new ArrayList<>();
        Path current = folder.resolve(CURVES);
        try {
            if (curves(stages, current)) {
                out.add(current);
            }
            current = folder.resolve(RATIOS);
            if (ratios(stages, current)) {
                out.add(current);
            }
        } catch (IOException e) {
            throw new DataError(current + ": cannot write it (" + DataError.reason(e) + ")", e);
        }
        return out;
    }

    /** A family's colour in the ratios: that of the arm it sets against the rest. */
    static Color color(SecondAnalysis.Family family) {
        return switch (family) {
            case PRIMARY -> color(SecondArm.MUON);
            case CONTROL -> color(SecondArm.ADAMW_2LR);
            case TWO_LRS -> color(SecondArm.ADAMW);
            case VARIANTS -> color(SecondArm.NORMUON);
        };
    }

    /** Each arm's colour in the curves. */
    static Color color(SecondArm arm) {
        return switch (arm) {
            case ADAMW -> new Color(30, 90, 200);
            case ADAMW_2LR -> new Color(120, 60, 200);
            case MUON -> new Color(214, 90, 0);
            default -> new Color(40, 160, 170);
        };
    }

    /** A panel per stage with confirmation runs: validation loss by step, mean and band over the seeds. */
    private static boolean curves(List<SecondAnalysis.StageRuns> stages, Path png) throws IOException {
        PanelFigure figure = new PanelFigure("The second study: validation loss of the tuned configurations",
                "confirmation seeds " + SecondPlan.CONFIRMATION_SEEDS.get(0) + "–"
                        + SecondPlan.CONFIRMATION_SEEDS.get(SecondPlan.CONFIRMATION_SEEDS.size() - 1)
                        + ": mean, band lowest to highest; grey: the target (AdamW's highest final loss)");
        boolean any = false;
        for (SecondAnalysis.StageRuns s : stages) {
            if (CURVE_ARMS.stream().noneMatch(s.runs()::containsKey)) {
                continue;
            }
            any = true;
            XYChart panel = figure.panel(s.stage().id(), "step", "validation loss (nats per character)", "0");
            panel.getStyler().setXAxisMin(0.0);
            double top = Double.NEGATIVE_INFINITY;
            for (SecondArm arm : CURVE_ARMS) {
                List<SecondResult> runs = s.runs().get(arm);
                if (runs != null) {
                    top = Math.max(top, curve(figure, panel, arm, runs));
                }
            }
            if (Double.isFinite(top)) {
                // From about ln(vocabulary) the first evaluations fall steeply: the axis ends at the highest curve a
                // tenth of the way in, so that the crossings of the target are not squashed.
                panel.getStyler().setYAxisMax(Math.ceil(top * 10) / 10);
            }
            if (Double.isFinite(s.target())) {
                figure.line(panel, "target", new double[] {0, s.stage().steps()}, new double[] {s.target(),
                    s.target()}, GREY, true).setMarker(SeriesMarkers.NONE);
            }
        }
        if (any) {
            figure.write(png);
        }
        return any;
    }

    /**
     * One arm's mean curve and band, from the first evaluation after step 0, up to the first evaluation where any
     * seed's loss is not finite.
     *
     * @return the mean loss a tenth of the way in, or negative infinity if the curve has no finite point there
     */
    private static double curve(PanelFigure figure, XYChart panel, SecondArm arm, List<SecondResult> runs) {
        int[] steps = runs.get(0).evalSteps();
        int n = steps.length - 1;
        List<double[]> points = new ArrayList<>();
        for (int k = 1; k <= n; k++) {
            int at = k;
            double[] values = runs.stream().mapToDouble(r -> r.valLoss()[at]).toArray();
            if (!Arrays.stream(values).allMatch(Double::isFinite)) {
                break;
            }
            points.add(new double[] {steps[k], SampleStats.mean(values), Arrays.stream(values).min().orElseThrow(),
                Arrays.stream(values).max().orElseThrow()});
        }
        if (points.isEmpty()) {
            return Double.NEGATIVE_INFINITY;
        }
        double[] x = column(points, 0);
        double[] mean = column(points, 1);
        Color color = color(arm);
        figure.band(panel, arm.label(), x, column(points, 2), column(points, 3), color);
        figure.line(panel, arm.label(), x, mean, color, false).setMarker(SeriesMarkers.NONE);
        figure.endLabel(panel, x[x.length - 1], mean[mean.length - 1], String.format(Locale.ROOT, "%s %.3f",
                arm.label(), mean[mean.length - 1]));
        int tenth = Math.max(1, n / 10);
        return points.size() >= tenth ? mean[tenth - 1] : Double.NEGATIVE_INFINITY;
    }

    /**
     * The ratios with their intervals, a row each: one panel for the three families over the stages, one for the
     * variants; a grey line at 1.
     */
    private static boolean ratios(List<SecondAnalysis.StageRuns> stages, Path png) throws IOException {
        PanelFigure figure = new PanelFigure("The second study: steps to the target, X over Y",
                "geometric mean over the confirmation seeds, paired by seed, with its 95 % interval; below 1: X needs "
                        + "fewer steps; a run that never reaches the target counts as the budget");
        boolean any = false;
        List<List<SecondAnalysis.Family>> panels = List.of(List.of(SecondAnalysis.Family.PRIMARY,
                SecondAnalysis.Family.CONTROL, SecondAnalysis.Family.TWO_LRS), List.of(SecondAnalysis.Family.VARIANTS));
        for (List<SecondAnalysis.Family> families : panels) {
            List<SecondAnalysis.Comparison> ready = new ArrayList<>();
            List<SecondAnalysis.Family> of = new ArrayList<>();
            for (SecondAnalysis.Family f : families) {
                for (SecondAnalysis.Comparison c : SecondAnalysis.compare(f, stages)) {
                    if (c.ready()) {
                        ready.add(c);
                        of.add(f);
                    }
                }
            }
            if (ready.isEmpty()) {
                continue;
            }
            any = true;
            XYChart panel = figure.panel(families.contains(SecondAnalysis.Family.VARIANTS)
                    ? "variants against MuonAdamW, GCIDE B1" : "MuonAdamW and the control, per stage",
                    "steps ratio X / Y", "", "0.00");
            panel.getStyler().setYAxisTicksVisible(false);
            panel.getStyler().setYAxisMin(-1.0);
            panel.getStyler().setYAxisMax((double) ready.size());
            double low = 1;
            for (int i = 0; i < ready.size(); i++) {
                SecondAnalysis.Comparison c = ready.get(i);
                SecondAnalysis.Family f = of.get(i);
                // The first row at the top.
                double y = ready.size() - 1 - i;
                Color color = color(f);
                figure.line(panel, f.title(), new double[] {c.low(), c.high()}, new double[] {y, y}, color, false)
                        .setMarker(SeriesMarkers.NONE);
                figure.line(panel, f.title(), new double[] {c.ratio()}, new double[] {y}, color, false)
                        .setMarker(SeriesMarkers.DIAMOND);
                SecondAnalysis.Planned q = c.planned();
                String row = f == SecondAnalysis.Family.VARIANTS ? q.x().label() : q.stage().id();
                figure.endLabel(panel, c.high(), y, String.format(Locale.ROOT, "%s %.2f", row, c.ratio()));
                low = Math.min(low, c.low());
            }
            figure.line(panel, "equal (1)", new double[] {1, 1}, new double[] {-1, ready.size()}, GREY, true)
                    .setMarker(SeriesMarkers.NONE);
            panel.getStyler().setXAxisMin(Math.floor(low * 10) / 10);
        }
        if (any) {
            figure.write(png);
        }
        return any;
    }

    private static double[] column(List<double[]> rows, int column) {
        return rows.stream().mapToDouble(r -> r[column]).toArray();
    }
}
