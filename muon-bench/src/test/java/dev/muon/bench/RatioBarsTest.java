package dev.muon.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The NS figure draws no bar for a variant not run at a shape, and no error bar below 0 (issue 30, item 12). */
class RatioBarsTest {
    private static Map<String, Map<String, NsScores.Ratio>> bars() {
        Map<String, Map<String, NsScores.Ratio>> bars = new LinkedHashMap<>();
        bars.put("ns-auto", Map.of("512x512", new NsScores.Ratio(0.8, 0.9), "4096x4096", new NsScores.Ratio(0.7, 0.1)));
        bars.put("ns-symmetric", Map.of("512x512", new NsScores.Ratio(0.9, 0.1)));
        bars.put("gemm", Map.of("512x512", new NsScores.Ratio(1, 0.2), "4096x4096", new NsScores.Ratio(1, 5.0)));
        return bars;
    }

    @Test
    void aShapeWithoutAVariant_hasNoBarForIt() {
        assertEquals(List.of("ns-auto", "ns-symmetric", "gemm"), RatioBars.drawnAt(bars(), "512x512"));
        assertEquals(List.of("ns-auto", "gemm"), RatioBars.drawnAt(bars(), "4096x4096"));
    }

    @Test
    void errorBars_areClippedToTheAxis() {
        assertArrayEquals(new double[] {0, 1.7}, RatioBars.errorBar(new NsScores.Ratio(0.8, 0.9), 2.0), 1e-12);
        assertArrayEquals(new double[] {0, 2.0}, RatioBars.errorBar(new NsScores.Ratio(1, 5.0), 2.0), 1e-12);
        assertArrayEquals(new double[] {0.8, 1.0}, RatioBars.errorBar(new NsScores.Ratio(0.9, 0.1), 2.0), 1e-12);
    }

    @Test
    void axisTop_leavesRoomForTheBars_butNotForAnyInterval() {
        double top = RatioBars.axisTop(bars());
        // The tallest bar is 1; an interval to 6 does not stretch the axis past 1.6 times that (plus a margin).
        assertEquals(1.75, top, 1e-12);
        assertEquals(0, top * 4 % 1, 1e-12, "a multiple of 0.25");
    }

    @Test
    void write_drawsAFigure(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("ns.png");
        RatioBars.write(png, "title", "note", List.of("512x512", "4096x4096"), bars());
        assertNotNull(ImageIO.read(png.toFile()));
        assertTrue(png.toFile().length() > 1000);
    }
}
