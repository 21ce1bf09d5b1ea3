package dev.muon.examples;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ComparisonPlotTest {
    @Test
    void centredMean_keepsALine_whereATrailingMeanLags() {
        double[] line = new double[60];
        for (int i = 0; i < line.length; i++) {
            line[i] = 3 - 0.05 * i;
        }
        // A symmetric window around each point leaves a straight line where it is: no lag, no kink where a
        // trailing window would fill up.
        assertArrayEquals(line, ComparisonPlot.centredMean(line, 12), 1e-12);
    }

    @Test
    void centredMean_averagesNoise_overTheWindow() {
        double[] values = {0, 10, 0, 10, 0, 10, 0};
        double[] smooth = ComparisonPlot.centredMean(values, 1);
        assertEquals(0, smooth[0], 1e-12, "the ends keep a window of one");
        assertEquals(10.0 / 3, smooth[1], 1e-12);
        assertEquals(20.0 / 3, smooth[2], 1e-12);
    }

    @Test
    void write_drawsOneFigureWithThreePanels(@TempDir Path dir) throws Exception {
        List<FashionMnist.Result> results = new ArrayList<>();
        for (String optimizer : List.of("AdamW", "MuonAdamW")) {
            for (double lr : List.of(1e-3, 3e-3)) {
                for (long seed = 1; seed <= 3; seed++) {
                    List<FashionMnist.EpochPoint> epochs = List.of(
                            new FashionMnist.EpochPoint(1, 1.0 * seed, 0.80 + 0.01 * seed, 0.5, 0.6),
                            new FashionMnist.EpochPoint(2, 2.0 * seed, 0.85 + 0.01 * seed, 0.4, 0.5));
                    List<Double> steps = new ArrayList<>();
                    for (int s = 0; s < 40; s++) {
                        steps.add(2.0 - 0.03 * s);
                    }
                    results.add(new FashionMnist.Result("mlp", optimizer, lr, seed, epochs, steps, 100));
                }
            }
        }
        Path png = dir.resolve("figure.png");
        ComparisonPlot.write(png, "test", results, 1e-3, 20, "load average 0.1 to 0.2 on 2 cores");
        BufferedImage image = ImageIO.read(png.toFile());
        assertEquals(3 * PanelFigure.PANEL_WIDTH, image.getWidth(), "three panels side by side");
        assertTrue(image.getHeight() > PanelFigure.PANEL_HEIGHT);
    }
}
