package dev.muon.examples;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** End labels: never overlapping, and as close to their curves as that allows. */
class PanelFigureTest {
    @Test
    void spread_leavesLabelsThatDoNotOverlapWhereTheyAre() {
        assertArrayEquals(new double[] {0.2, 0.5, 0.9}, PanelFigure.spread(new double[] {0.2, 0.5, 0.9}, 0.1),
                1e-12);
    }

    @Test
    void spread_centresARunOfOverlappingLabelsOnTheirCurves() {
        // Two curves ending 0.02 apart, gap 0.1: the labels go 0.05 below and above their mean.
        assertArrayEquals(new double[] {0.26, 0.36}, PanelFigure.spread(new double[] {0.30, 0.32}, 0.1), 1e-12);
        // A third close below joins the run; the label far above stays.
        assertArrayEquals(new double[] {0.2, 0.3, 0.4, 0.9},
                PanelFigure.spread(new double[] {0.29, 0.30, 0.31, 0.9}, 0.1), 1e-12);
    }

    @Test
    void spread_mergesRunsThatCollideAfterCentring() {
        double[] out = PanelFigure.spread(new double[] {0.0, 0.05, 0.16, 0.17}, 0.1);
        for (int i = 1; i < out.length; i++) {
            org.junit.jupiter.api.Assertions.assertTrue(out[i] - out[i - 1] >= 0.1 - 1e-12, java.util.Arrays
                    .toString(out));
        }
        // One run of four, centred on the mean of the ends, 0.095.
        assertArrayEquals(new double[] {-0.055, 0.045, 0.145, 0.245}, out, 1e-12);
    }
}
