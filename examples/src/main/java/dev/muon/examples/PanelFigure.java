package dev.muon.examples;

import org.knowm.xchart.AnnotationText;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.lines.SeriesLines;

import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.Stroke;
import java.awt.font.FontRenderContext;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The layout the examples' figures share: panels side by side under a title and a note, one legend for all of them
 * below the panels (so that no legend covers a curve), and a label at the right end of each curve with its final
 * value, pushed apart where two ends meet. {@link ComparisonPlot} and {@link CurvesFigure} draw with it.
 */
public final class PanelFigure {
    static final int PANEL_WIDTH = 620;
    static final int PANEL_HEIGHT = 440;
    private static final int HEADER = 58;
    private static final int LEGEND_ROW = 26;
    /** Space between a curve's end and its label, in pixels. */
    private static final double LABEL_PAD_PIXELS = 6;
    /** The plot area's width inside a panel, roughly: the panel less the y axis's title and labels. */
    private static final double PLOT_WIDTH_PIXELS = PANEL_WIDTH - 90;
    /** The smallest distance between two end labels, in pixels of the plot area (about one line of text). */
    private static final double LABEL_GAP_PIXELS = 15;
    /** The plot area's height inside a panel, roughly: the panel less its title and axis titles and labels. */
    private static final double PLOT_HEIGHT_PIXELS = PANEL_HEIGHT - 110;

    private final String title;
    private final String note;
    private final List<XYChart> panels = new ArrayList<>();
    private final List<List<EndLabel>> labels = new ArrayList<>();
    private final List<LegendEntry> legend = new ArrayList<>();

    /** One curve's label: where its last point is and what to write there. */
    private record EndLabel(double x, double y, String text) {
    }

    /** One legend entry: a line sample and its label. */
    private record LegendEntry(String label, Color color, boolean dashed) {
    }

    /**
     * A figure with a title and a smaller note under it.
     *
     * @param title the title
     * @param note  the note, or empty
     */
    public PanelFigure(String title, String note) {
        this.title = title;
        this.note = note;
    }

    /**
     * Adds a panel, to the right of the others.
     *
     * @param panelTitle its title
     * @param xTitle     the x axis's title
     * @param yTitle     the y axis's title
     * @param xPattern   the {@link java.text.DecimalFormat} pattern of the x ticks ({@code "0.#"} for epochs)
     * @return the panel, to add series to
     */
    public XYChart panel(String panelTitle, String xTitle, String yTitle, String xPattern) {
        XYChart chart = new XYChartBuilder().width(PANEL_WIDTH).height(PANEL_HEIGHT).title(panelTitle)
                .xAxisTitle(xTitle).yAxisTitle(yTitle).build();
        chart.getStyler().setLegendVisible(false);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotBackgroundColor(Color.WHITE);
        // A pattern, not a formatting function: XChart 3.8's tick search with a function that gives two ticks the
        // same label never ends.
        chart.getStyler().setXAxisDecimalPattern(xPattern);
        // About one tick per 90 pixels: whole and half epochs on a 2- or 3-epoch axis, not fifths.
        chart.getStyler().setXAxisTickMarkSpacingHint(90);
        chart.getStyler().setAnnotationTextFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        chart.getStyler().setAnnotationTextFontColor(Color.DARK_GRAY);
        panels.add(chart);
        labels.add(new ArrayList<>());
        return chart;
    }

    /**
     * Adds a line to a panel, styled, and to the legend once per label.
     *
     * @param panel  the panel
     * @param label  the legend's text
     * @param x      x values
     * @param y      y values
     * @param color  its colour
     * @param dashed dashed instead of solid
     * @return the series
     */
    public XYSeries line(XYChart panel, String label, double[] x, double[] y, Color color, boolean dashed) {
        XYSeries series = panel.addSeries(label + " #" + panel.getSeriesMap().size(), x, y);
        series.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        series.setLineColor(color);
        series.setMarkerColor(color);
        series.setLineWidth(2f);
        series.setLineStyle(dashed ? SeriesLines.DASH_DASH : SeriesLines.SOLID);
        if (legend.stream().noneMatch(e -> e.label().equals(label))) {
            legend.add(new LegendEntry(label, color, dashed));
        }
        return series;
    }

    /**
     * Shades the band between two curves of a panel (the seeds' lowest and highest values, say), in a pale tone of
     * {@code color}; it joins no legend.
     *
     * @param panel the panel
     * @param label the band's name, unique in the panel
     * @param x     x values
     * @param low   the band's lower edge
     * @param high  its upper edge
     * @param color the colour of the curve it belongs to
     */
    public void band(XYChart panel, String label, double[] x, double[] low, double[] high, Color color) {
        // One closed polygon: along the highs, back along the lows.
        int n = x.length;
        double[] px = new double[2 * n];
        double[] py = new double[2 * n];
        for (int i = 0; i < n; i++) {
            px[i] = x[i];
            py[i] = high[i];
            px[2 * n - 1 - i] = x[i];
            py[2 * n - 1 - i] = low[i];
        }
        XYSeries band = panel.addSeries(label + " band #" + panel.getSeriesMap().size(), px, py);
        band.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.PolygonArea);
        band.setFillColor(new Color(color.getRed(), color.getGreen(), color.getBlue(), 55));
        band.setLineColor(new Color(0, 0, 0, 0));
        band.setMarker(org.knowm.xchart.style.markers.SeriesMarkers.NONE);
    }

    /**
     * Labels the end of a curve.
     *
     * @param panel the panel
     * @param x     the curve's last x
     * @param y     the curve's last y
     * @param text  what to write: its final value, and the difference to its baseline
     */
    public void endLabel(XYChart panel, double x, double y, String text) {
        labels.get(panels.indexOf(panel)).add(new EndLabel(x, y, text));
    }

    /**
     * Lays the panels out and writes the PNG.
     *
     * @param png the file
     * @throws IOException if it cannot be written
     */
    public void write(Path png) throws IOException {
        for (int i = 0; i < panels.size(); i++) {
            placeLabels(panels.get(i), labels.get(i));
        }
        int rows = (legend.size() + 2) / 3;
        BufferedImage image = new BufferedImage(panels.size() * PANEL_WIDTH, HEADER + PANEL_HEIGHT + 12
                + rows * LEGEND_ROW, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, image.getWidth(), image.getHeight());
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
        g.drawString(title, 20, 26);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        g.setColor(Color.DARK_GRAY);
        g.drawString(note, 20, 47);
        for (int i = 0; i < panels.size(); i++) {
            g.drawImage(BitmapEncoder.getBufferedImage(panels.get(i)), i * PANEL_WIDTH, HEADER, null);
        }
        drawLegend(g, HEADER + PANEL_HEIGHT + 8, image.getWidth());
        g.dispose();
        ImageIO.write(image, "png", png.toFile());
    }

    /** Widens the x axis for the labels, pushes labels apart that would overlap, and adds them. */
    private static void placeLabels(XYChart panel, List<EndLabel> endLabels) {
        double xMin = Double.POSITIVE_INFINITY;
        double xMax = Double.NEGATIVE_INFINITY;
        double yMin = Double.POSITIVE_INFINITY;
        double yMax = Double.NEGATIVE_INFINITY;
        for (XYSeries s : panel.getSeriesMap().values()) {
            xMin = Math.min(xMin, s.getXMin());
            xMax = Math.max(xMax, s.getXMax());
            yMin = Math.min(yMin, s.getYMin());
            yMax = Math.max(yMax, s.getYMax());
        }
        if (endLabels.isEmpty() || !(xMax > xMin)) {
            return;
        }
        Double fixedMin = panel.getStyler().getXAxisMin();
        double left = fixedMin != null ? fixedMin : xMin;
        // Room on the right for the widest label: its width, in pixels, turned into x units.
        FontRenderContext frc = new FontRenderContext(null, true, true);
        Font font = panel.getStyler().getAnnotationTextFont();
        double widest = 0;
        for (EndLabel l : endLabels) {
            widest = Math.max(widest, font.getStringBounds(l.text(), frc).getWidth());
        }
        double room = widest + 2 * LABEL_PAD_PIXELS;
        double right = xMax + (xMax - left) * room / (PLOT_WIDTH_PIXELS - room);
        panel.getStyler().setXAxisMin(left);
        panel.getStyler().setXAxisMax(right);
        double unitsPerPixel = (right - left) / PLOT_WIDTH_PIXELS;
        Double fixedMax = panel.getStyler().getYAxisMax();
        double top = fixedMax != null ? fixedMax : yMax;
        double gap = (top - yMin) * LABEL_GAP_PIXELS / PLOT_HEIGHT_PIXELS;
        List<EndLabel> sorted = new ArrayList<>(endLabels);
        sorted.sort(Comparator.comparingDouble(EndLabel::y));
        double[] ys = spread(sorted.stream().mapToDouble(EndLabel::y).toArray(), gap);
        // Labels pushed past the bottom or the top move together, so that none leaves the plot.
        double shift = Math.max(0, yMin + gap / 2 - ys[0]);
        shift -= Math.max(0, ys[ys.length - 1] + shift - (top - gap / 2));
        for (int i = 0; i < ys.length; i++) {
            double y = ys[i] + shift;
            EndLabel l = sorted.get(i);
            // AnnotationText centres its text on the point: the centre goes half a label right of the curve's end.
            double width = font.getStringBounds(l.text(), frc).getWidth();
            double x = l.x() + (LABEL_PAD_PIXELS + width / 2) * unitsPerPixel;
            panel.addAnnotation(new AnnotationText(l.text(), x, y, false));
        }
    }

    /**
     * Label heights at least {@code gap} apart and as close to their curves as that allows: labels that would
     * overlap form a run, centred on the mean of their curves' ends.
     *
     * @param targets the curves' ends, ascending
     * @param gap     the smallest distance between two labels
     * @return the labels' heights, ascending
     */
    static double[] spread(double[] targets, double gap) {
        int n = targets.length;
        // Runs of labels, each with its first index, its size and the mean of its targets.
        int[] start = new int[n];
        int[] size = new int[n];
        double[] mean = new double[n];
        int runs = 0;
        for (int i = 0; i < n; i++) {
            start[runs] = i;
            size[runs] = 1;
            mean[runs] = targets[i];
            runs++;
            // Merge while the last run overlaps the one below it.
            while (runs > 1 && bottom(mean[runs - 2], size[runs - 2], gap) + size[runs - 2] * gap
                    > bottom(mean[runs - 1], size[runs - 1], gap)) {
                int total = size[runs - 2] + size[runs - 1];
                mean[runs - 2] = (mean[runs - 2] * size[runs - 2] + mean[runs - 1] * size[runs - 1]) / total;
                size[runs - 2] = total;
                runs--;
            }
        }
        double[] out = new double[n];
        for (int r = 0; r < runs; r++) {
            double first = bottom(mean[r], size[r], gap);
            for (int k = 0; k < size[r]; k++) {
                out[start[r] + k] = first + k * gap;
            }
        }
        return out;
    }

    /** The lowest label of a run of {@code size}, centred on {@code mean}. */
    private static double bottom(double mean, int size, double gap) {
        return mean - (size - 1) * gap / 2;
    }

    private void drawLegend(Graphics2D g, int top, int width) {
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        int columns = 3;
        int cell = width / columns;
        for (int i = 0; i < legend.size(); i++) {
            LegendEntry e = legend.get(i);
            int x = (i % columns) * cell + 40;
            int y = top + (i / columns) * LEGEND_ROW + 14;
            Stroke before = g.getStroke();
            g.setColor(e.color());
            g.setStroke(e.dashed() ? new BasicStroke(3f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f,
                    new float[] {8f, 5f}, 0f) : new BasicStroke(3f));
            g.drawLine(x, y - 4, x + 36, y - 4);
            g.setStroke(before);
            g.setColor(Color.BLACK);
            g.drawString(e.label(), x + 44, y);
        }
    }
}
