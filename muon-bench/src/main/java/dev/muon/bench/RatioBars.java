package dev.muon.bench;

import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@link BenchmarkPlot}'s chart: for each shape, a group of bars, one per variant measured at that shape and none
 * for a variant that was not (XChart's category charts put a zero-height stub there); error bars clipped to the
 * axis (a time ratio is never below 0, and one slow iteration on a shared machine can make an interval taller than
 * the chart); the floor's level 1 as a dashed line; each bar's ratio written above it; the legend below the axis.
 */
final class RatioBars {
    private static final int WIDTH = 1280;
    private static final int HEIGHT = 640;
    private static final int LEFT = 80;
    private static final int RIGHT = 20;
    private static final int TOP = 56;
    private static final int BOTTOM = 120;
    private static final List<Color> PALETTE = List.of(new Color(214, 90, 0), new Color(30, 90, 200),
            new Color(40, 160, 170), new Color(160, 40, 120), new Color(110, 110, 110), new Color(90, 160, 40),
            new Color(200, 160, 0));
    /** The variants in the order of {@link #PALETTE}, so that a variant has its colour in every chart. */
    private static final List<String> KNOWN = List.of("ns-auto", "ns-gemm", "ns-symmetric", "ns-gram", "gemm",
            "naive");

    private static Color color(String variant, List<String> variants) {
        int known = KNOWN.indexOf(variant);
        if (known >= 0) {
            return PALETTE.get(known);
        }
        int other = (int) variants.stream().filter(v -> !KNOWN.contains(v)).takeWhile(v -> !v.equals(variant))
                .count();
        return PALETTE.get((KNOWN.size() + other) % PALETTE.size());
    }

    private RatioBars() {
    }

    /**
     * The top of the y axis: the tallest bar with room for its label, and error bars up to 1.6 times that, at most.
     *
     * @param bars variant, then shape, to its ratio
     * @return the axis's top, a multiple of 0.25
     */
    static double axisTop(Map<String, Map<String, NsScores.Ratio>> bars) {
        double tallest = 1;
        double reach = 1;
        for (Map<String, NsScores.Ratio> byShape : bars.values()) {
            for (NsScores.Ratio r : byShape.values()) {
                tallest = Math.max(tallest, r.ratio());
                reach = Math.max(reach, r.ratio() + r.error());
            }
        }
        double top = Math.min(reach, 1.6 * tallest) * 1.08;
        return Math.ceil(top * 4) / 4;
    }

    /**
     * The bars of one shape's group: the variants measured at it, in the legend's order.
     *
     * @param bars  variant, then shape, to its ratio
     * @param shape the shape
     * @return the variants that have a bar there
     */
    static List<String> drawnAt(Map<String, Map<String, NsScores.Ratio>> bars, String shape) {
        return bars.entrySet().stream().filter(e -> e.getValue().containsKey(shape)).map(Map.Entry::getKey)
                .toList();
    }

    /**
     * An error bar's ends on the axis: never below 0, never above its top.
     *
     * @param r   the ratio and its error
     * @param top the axis's top
     * @return the low and the high end
     */
    static double[] errorBar(NsScores.Ratio r, double top) {
        return new double[] {Math.max(0, r.ratio() - r.error()), Math.min(top, r.ratio() + r.error())};
    }

    /**
     * Draws the chart.
     *
     * @param png    the file
     * @param title  the title
     * @param note   a line under the title: where the numbers come from
     * @param shapes the shapes, in order
     * @param bars   variant, then shape, to its ratio; a shape a variant lacks gets no bar
     * @throws IOException if the file cannot be written
     */
    static void write(Path png, String title, String note, List<String> shapes,
                      Map<String, Map<String, NsScores.Ratio>> bars) throws IOException {
        BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, WIDTH, HEIGHT);
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 17));
        g.drawString(title, LEFT, 26);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        g.setColor(Color.DARK_GRAY);
        g.drawString(note, LEFT, 44);

        double top = axisTop(bars);
        int plotWidth = WIDTH - LEFT - RIGHT;
        int plotHeight = HEIGHT - TOP - BOTTOM;
        int baseline = TOP + plotHeight;
        // Grid and y ticks every 0.25.
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        FontMetrics fm = g.getFontMetrics();
        for (double y = 0; y <= top + 1e-9; y += 0.25) {
            int py = baseline - (int) Math.round(y / top * plotHeight);
            g.setColor(new Color(225, 225, 225));
            g.drawLine(LEFT, py, LEFT + plotWidth, py);
            g.setColor(Color.DARK_GRAY);
            String label = String.format(Locale.ROOT, "%.2f", y);
            g.drawString(label, LEFT - 8 - fm.stringWidth(label), py + 4);
        }
        g.setColor(Color.BLACK);
        g.drawLine(LEFT, TOP, LEFT, baseline);
        g.drawLine(LEFT, baseline, LEFT + plotWidth, baseline);
        // The floor's level.
        int floorY = baseline - (int) Math.round(1 / top * plotHeight);
        g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0));
        g.setColor(Color.GRAY);
        g.drawLine(LEFT, floorY, LEFT + plotWidth, floorY);
        g.setStroke(new BasicStroke(1f));

        List<String> variants = new ArrayList<>(bars.keySet());
        int group = plotWidth / shapes.size();
        int barWidth = Math.min(34, (int) (group * 0.85 / variants.size()));
        for (int s = 0; s < shapes.size(); s++) {
            String shape = shapes.get(s);
            List<String> here = drawnAt(bars, shape);
            int left = LEFT + s * group + (group - here.size() * barWidth) / 2;
            for (int i = 0; i < here.size(); i++) {
                String variant = here.get(i);
                NsScores.Ratio r = bars.get(variant).get(shape);
                Color color = color(variant, variants);
                int x = left + i * barWidth;
                int h = (int) Math.round(Math.min(r.ratio(), top) / top * plotHeight);
                g.setColor(color);
                g.fillRect(x + 2, baseline - h, barWidth - 4, h);
                double[] ends = errorBar(r, top);
                int cx = x + barWidth / 2;
                int low = baseline - (int) Math.round(ends[0] / top * plotHeight);
                int high = baseline - (int) Math.round(ends[1] / top * plotHeight);
                g.setColor(Color.BLACK);
                g.drawLine(cx, low, cx, high);
                g.drawLine(cx - 4, low, cx + 4, low);
                if (r.ratio() + r.error() > top) {
                    // Clipped at the top: an arrow says the interval goes on.
                    g.fillPolygon(new int[] {cx - 4, cx + 4, cx}, new int[] {high + 6, high + 6, high}, 3);
                } else {
                    g.drawLine(cx - 4, high, cx + 4, high);
                }
                String value = String.format(Locale.ROOT, "%.2f", r.ratio());
                g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
                g.drawString(value, cx - g.getFontMetrics().stringWidth(value) / 2, baseline - h - 3);
                g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
            }
            g.setColor(Color.BLACK);
            g.drawString(shape, LEFT + s * group + (group - fm.stringWidth(shape)) / 2, baseline + 18);
        }
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        String xTitle = "shape (rows x columns); dashed: the GEMM floor, 1";
        g.drawString(xTitle, LEFT + (plotWidth - g.getFontMetrics().stringWidth(xTitle)) / 2, baseline + 40);
        // The legend, below.
        int legendY = baseline + 70;
        int x = LEFT;
        for (String variant : variants) {
            g.setColor(color(variant, variants));
            g.fillRect(x, legendY - 11, 22, 12);
            g.setColor(Color.BLACK);
            g.drawString(variant, x + 28, legendY);
            x += 40 + g.getFontMetrics().stringWidth(variant);
        }
        g.dispose();
        ImageIO.write(image, "png", png.toFile());
    }
}
