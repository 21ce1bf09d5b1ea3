package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The drop-in factory, the lr interface shared with Muon, schedules, metrics and zeroGrad. */
@ExtendWith(NativeScopePerTest.class)
class MuonAdamWBehaviourTest {
    @Test
    void dropIn_carriesAdamWHyperparametersOver_withRmsMatchedMuon() {
        Module gpt = TestModels.gptLike(20, 8, 1);
        AdamWOptions options = new AdamWOptions(3e-4);
        options.weight_decay().put(0.1);
        MuonAdamW opt = MuonAdamW.dropIn(gpt.named_parameters(), options);
        assertEquals(new AdamWConfig(3e-4, 0.9, 0.999, 1e-8, 0.1), opt.adamWConfig());
        assertEquals(3e-4, opt.muonConfig().lr());
        assertEquals(0.1, opt.muonConfig().weightDecay());
        assertEquals(AdjustLr.MATCH_RMS_ADAMW, opt.muonConfig().adjustLr());
    }

    @Test
    void schedule_isWrittenOnce_forMuonAndMuonAdamW() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("w", torch.randn(4, 4).requires_grad_(true));
        named.put("b", torch.randn(4).requires_grad_(true));
        MuonAdamW hybrid = MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(0.02))
                .adamW(AdamWConfig.defaults().withLr(3e-3)).build();
        Muon muon = Muon.of(List.of(torch.randn(4, 4).requires_grad_(true)), MuonConfig.defaults().withLr(0.04));
        for (TrainingOptimizer opt : List.<TrainingOptimizer>of(hybrid, muon)) {
            double[] base = new double[opt.groupCount()];
            for (int g = 0; g < base.length; g++) {
                base[g] = opt.lr(g);
            }
            LrScheduler lrs = LrScheduler.of(opt, LrSchedule.warmupStableDecay(10, 20, 10, 0.1));
            lrs.apply(4);
            for (int g = 0; g < base.length; g++) {
                assertEquals(base[g] * 0.5, opt.lr(g), 1e-15, "warm-up, group " + g);
            }
            lrs.apply(45);
            for (int g = 0; g < base.length; g++) {
                assertEquals(base[g] * 0.1, opt.lr(g), 1e-15, "after the decay, group " + g);
            }
        }
        assertEquals(0.02 * 0.1, hybrid.muonConfig().lr(), 1e-15);
        assertEquals(3e-3 * 0.1, hybrid.adamWConfig().lr(), 1e-15);
    }

    @Test
    void schedules_followTheirFormulas() {
        LrSchedule cosine = LrSchedule.warmupCosine(4, 14, 0.1);
        assertEquals(0.25, cosine.factor(0));
        assertEquals(1.0, cosine.factor(3));
        assertEquals(1.0, cosine.factor(4));
        assertEquals(0.1 + 0.9 * 0.5, cosine.factor(9), 1e-15);
        assertEquals(0.1, cosine.factor(14));
        assertEquals(0.1, cosine.factor(1_000_000));
        LrSchedule wsd = LrSchedule.warmupStableDecay(2, 3, 4, 0.0);
        double[] expected = {0.5, 1, 1, 1, 1, 0.75, 0.5, 0.25, 0, 0};
        for (int s = 0; s < expected.length; s++) {
            assertEquals(expected[s], wsd.factor(s), 1e-15, "step " + s);
        }
        assertEquals(1.0, LrSchedule.constant().factor(123));
        assertEquals(1.0, LrSchedule.warmupCosine(0, 10, 0).factor(0), "no warm-up starts at the base lr");
    }

    @Test
    void metrics_reportNormsRmsAndLr_perGroup() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("w", torch.randn(8, 4).to(ScalarType.Double).requires_grad_(true));
        named.put("b", torch.randn(8).to(ScalarType.Double).requires_grad_(true));
        MuonAdamW opt = MuonAdamW.builder(named).metrics(true).orthogonalityErrorFor("w")
                .muon(MuonConfig.defaults().withLr(0.02).withOrthogonalization(Orthogonalization.EXACT_SVD))
                .adamW(AdamWConfig.defaults().withWeightDecay(0))
                .build();
        TestModels.setGradients(named, 5);
        double gw = Math.sqrt(StepMeter.squaredNorm(named.get("w").grad()));
        double gb = Math.sqrt(StepMeter.squaredNorm(named.get("b").grad()));
        opt.step();
        StepReport report = opt.lastStep();
        assertEquals(1, report.step());
        GroupMetrics muon = report.groups().get(0);
        GroupMetrics adamW = report.groups().get(1);
        assertEquals(OptimizerKind.MUON, muon.optimizer());
        assertEquals(gw, muon.gradNorm(), 1e-12);
        assertEquals(gb, adamW.gradNorm(), 1e-12);
        // First step: Muon's buffer is (1 − μ)·g, AdamW's m is (1 − β1)·g.
        assertEquals(0.05 * gw, muon.momentumNorm(), 1e-12);
        assertEquals(0.1 * gb, adamW.momentumNorm(), 1e-12);
        // AdamW's first update is lr·sign(g) up to eps: RMS = lr.
        assertEquals(1e-3, adamW.updateRms(), 1e-9);
        assertEquals(0.02 * Math.sqrt(2), muon.adjustedLr().get("w"), 1e-15);
        assertEquals(1e-3, adamW.adjustedLr().get("b"));
        // The exact polar factor of an 8 x 4 matrix has orthonormal columns.
        assertTrue(report.orthogonalityError().get("w") < 1e-10, report.toString());
    }

    @Test
    void metricsOff_reportNothing_butOrthogonalityWhenAsked() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("w", torch.randn(8, 4).requires_grad_(true));
        MuonAdamW plain = MuonAdamW.builder(named).build();
        TestModels.setGradients(named, 5);
        plain.step();
        assertTrue(plain.lastStep().groups().isEmpty());
        assertTrue(plain.lastStep().orthogonalityError().isEmpty());

        MuonAdamW asked = MuonAdamW.builder(named).orthogonalityErrorFor("w").build();
        asked.step();
        double error = asked.lastStep().orthogonalityError().get("w");
        // Default coefficients leave singular values in about [0.66, 1.2]: the error is visible but bounded.
        assertTrue(error > 1e-3 && error < 2, "error " + error);
        assertTrue(asked.lastStep().groups().isEmpty());
    }

    @Test
    void zeroGrad_clearsBothGroups() {
        Module gpt = TestModels.gptLike(20, 4, 1);
        Map<String, Tensor> named = TestModels.named(gpt);
        MuonAdamW opt = MuonAdamW.builder(gpt.named_parameters()).build();
        TestModels.setGradients(named, 1);
        opt.zero_grad();
        for (Map.Entry<String, Tensor> e : named.entrySet()) {
            assertFalse(e.getValue().grad().defined(), e.getKey());
        }
    }
}
