package dev.muon.examples.study;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The second study's figures on {@link SecondAnalysisTest}'s made-up runs: a panel per stage with confirmation runs,
 * the ratios once a comparison is ready, and nothing drawn before any confirmation run.
 */
class SecondFiguresTest {
    @TempDir
    Path dir;

    private static BufferedImage read(Path png) throws IOException {
        BufferedImage image = ImageIO.read(png.toFile());
        assertNotNull(image, png + " is a PNG");
        return image;
    }

    @Test
    void wholeStudy_drawsFourStagePanels_andTwoRatioPanels() throws IOException {
        List<Path> written = SecondFigures.write(SecondAnalysisTest.study(SecondAnalysisTest::slope), dir);
        assertEquals(List.of(dir.resolve(SecondFigures.CURVES), dir.resolve(SecondFigures.RATIOS)), written);
        BufferedImage curves = read(written.get(0));
        BufferedImage ratios = read(written.get(1));
        // Panels stand side by side, each as wide as the others: four stages against two ratio panels.
        assertEquals(2 * ratios.getWidth(), curves.getWidth());
    }

    @Test
    void firstStageOnly_drawsItsPanel_andOneRatioPanelPerReadyFamilyGroup() throws IOException {
        List<SecondResult> all = SecondAnalysisTest.study(SecondAnalysisTest::slope);
        List<SecondResult> b1 = all.stream().filter(r -> r.cell().corpus().equals("gcide")
                && r.cell().steps() == SecondPlan.STAGES.get(0).steps()).toList();
        List<Path> written = SecondFigures.write(b1, dir);
        assertEquals(2, written.size());
        BufferedImage curves = read(written.get(0));
        BufferedImage ratios = read(written.get(1));
        // One stage: one panel; both ratio panels (the first stage's comparisons and its variants).
        assertEquals(2 * curves.getWidth(), ratios.getWidth());

        List<SecondResult> noVariants = b1.stream().filter(r -> !r.cell().arm().variant()).toList();
        Path other = Files.createDirectory(dir.resolve("no-variants"));
        List<Path> fewer = SecondFigures.write(noVariants, other);
        assertEquals(curves.getWidth(), read(fewer.get(1)).getWidth(), "the variants' panel is left out");
    }

    @Test
    void tuningRunsOnly_drawNothing() {
        List<SecondResult> tuning = SecondAnalysisTest.study(SecondAnalysisTest::slope).stream()
                .filter(r -> r.cell().seed() < 1000).toList();
        assertEquals(List.of(), SecondFigures.write(tuning, dir));
        assertTrue(dir.toFile().list().length == 0, "no file written");
    }
}
