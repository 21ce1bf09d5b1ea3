package dev.muon.djl;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.muon.AdamWConfig;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What docs/djl.md says of DJL's {@code Adam}, measured: its first step is
 * {@code p − lr·sqrt(1 − β2)/(1 − β1) · m/(sqrt(v) + eps)}, eps on the uncorrected root, where the AdamW of
 * {@link MuonAdamW} (PyTorch's formula) takes {@code p − lr/(1 − β1) · m/(sqrt(v)/sqrt(1 − β2) + eps)}. On
 * gradients near eps the two differ by a factor of several.
 */
class DjlAdamDifferenceTest {
    private static final double LR = 1e-3;
    private static final double EPS = 1e-8;

    /** One step of {@code optimizer} on {@code p0} with gradient {@code g}, returned as doubles. */
    private static double[] oneStep(Optimizer optimizer, float[] p0, float[] g, boolean hybrid) {
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray weight = manager.create(p0, new Shape(p0.length));
            weight.setRequiresGradient(true);
            try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
                collector.backward(weight.mul(manager.create(g, new Shape(g.length))).sum());
            }
            String id = hybrid ? null : "w";
            if (hybrid) {
                ParamBlock block = new ParamBlock().param("bias", weight);
                MuonAdamW opt = MuonAdamW.builder().optBlock(block).optAdamW(new AdamWConfig(LR, 0.9, 0.999, EPS, 0))
                        .optAllowEmptyMuon(true).build();
                id = block.getParameters().get(0).getValue().getId();
                optimizer = opt;
            }
            try (NDArray grad = weight.getGradient()) {
                optimizer.update(id, weight, grad);
            }
            return Measures.values(weight);
        }
    }

    @Test
    void djlsAdam_putsEpsOnTheUncorrectedRoot_pytorchsOnTheCorrectedOne() {
        float[] p0 = {1.0f, -0.5f, 0.25f};
        float[] g = {1e-7f, -3e-8f, 2e-6f};
        double[] djl = oneStep(Optimizer.adam().optLearningRateTracker(Tracker.fixed((float) LR)).build(), p0, g,
                false);
        double[] ours = oneStep(null, p0, g, true);
        double b1 = 0.9;
        double b2 = 0.999;
        for (int i = 0; i < p0.length; i++) {
            double m = (1 - b1) * g[i];
            double v = (1 - b2) * g[i] * g[i];
            double djlFormula = p0[i] - LR * Math.sqrt(1 - b2) / (1 - b1) * m / (Math.sqrt(v) + EPS);
            double pytorchFormula = p0[i] - LR / (1 - b1) * m / (Math.sqrt(v) / Math.sqrt(1 - b2) + EPS);
            assertEquals(djlFormula, djl[i], 1e-7, "DJL's Adam, element " + i);
            assertEquals(pytorchFormula, ours[i], 1e-7, "MuonAdamW's AdamW, element " + i);
        }
        // g = 1e-7: DJL moves by 0.24·lr, PyTorch's formula by 0.91·lr.
        double djlStep = Math.abs(djl[0] - p0[0]);
        double oursStep = Math.abs(ours[0] - p0[0]);
        assertTrue(oursStep > 3 * djlStep, "steps " + oursStep + " and " + djlStep);
    }
}
