package dev.muon.schedule;

import dev.muon.AdamWConfig;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * {@link LrScheduler#apply(long)} sets every group's lr or none: a schedule that yields an invalid lr for any
 * group, the last one included, leaves every group's lr (and the optimizer's configs) as they were.
 */
@ExtendWith(NativeScopePerTest.class)
class LrSchedulerTest {
    private static final double MUON_LR = 0.02;
    private static final double ADAMW_LR = 3e-3;

    static MuonAdamW hybrid() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("w", torch.randn(4, 4).requires_grad_(true));
        named.put("b", torch.randn(4).requires_grad_(true));
        return MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(MUON_LR))
                .adamW(AdamWConfig.defaults().withLr(ADAMW_LR)).build();
    }

    static Arguments row(String name, double[] baseLrs, LrSchedule schedule, String message) {
        return Arguments.of(name, baseLrs, schedule, message);
    }

    static Stream<Arguments> badFactors() {
        return Stream.of(
                // The case of the report: the Muon lr is fine, only the last group's is not.
                row("apply_adamWLrOverflowsToInfinity_changesNoGroup", new double[] {0.02, 1e300},
                        step -> 1e10,
                        "lr of group 1 at step 3 must be finite and >= 0, got Infinity (base lr 1.0E300 × factor "
                                + "1.0E10); no group's lr was changed"),
                row("apply_factorInfinity_changesNoGroup", new double[] {0.02, 3e-3},
                        step -> Double.POSITIVE_INFINITY,
                        "lr of group 0 at step 3 must be finite and >= 0, got Infinity (base lr 0.02 × factor "
                                + "Infinity); no group's lr was changed"),
                row("apply_factorNaN_changesNoGroup", new double[] {0.02, 3e-3}, step -> Double.NaN,
                        "lr of group 0 at step 3 must be finite and >= 0, got NaN (base lr 0.02 × factor NaN); "
                                + "no group's lr was changed"),
                row("apply_negativeFactor_changesNoGroup", new double[] {0.02, 3e-3}, step -> -0.5,
                        "lr of group 0 at step 3 must be finite and >= 0, got -0.01 (base lr 0.02 × factor -0.5); "
                                + "no group's lr was changed"),
                row("apply_zeroBaseTimesInfinity_isNaN_changesNoGroup", new double[] {0.0, 0.0},
                        step -> Double.POSITIVE_INFINITY,
                        "lr of group 0 at step 3 must be finite and >= 0, got NaN (base lr 0.0 × factor Infinity); "
                                + "no group's lr was changed"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badFactors")
    void apply_invalidLrForAnyGroup_isRejected_andChangesNothing(String name, double[] baseLrs, LrSchedule schedule,
                                                                String message) {
        MuonAdamW opt = hybrid();
        MuonConfig muonBefore = opt.muonConfig();
        AdamWConfig adamWBefore = opt.adamWConfig();
        LrScheduler lrs = LrScheduler.of(opt, schedule, baseLrs);

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> lrs.apply(3));

        assertEquals(MUON_LR, opt.lr(MuonAdamW.MUON_GROUP));
        assertEquals(ADAMW_LR, opt.lr(MuonAdamW.ADAMW_GROUP));
        assertEquals(muonBefore, opt.muonConfig());
        assertEquals(adamWBefore, opt.adamWConfig());
        assertEquals(message, e.getMessage());
    }

    @Test
    void apply_optimizerWithStricterRule_putsBackTheGroupsItHadSet() {
        // An optimizer may reject an lr that the interface's rule allows; apply must still change nothing.
        CappedOptimizer opt = new CappedOptimizer(new double[] {0.1, 0.2, 0.3}, 1.0);
        LrScheduler lrs = LrScheduler.of(opt, step -> 4.0, 0.1, 0.2, 0.3);

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> lrs.apply(0));

        assertEquals("lr of group 2 must be <= 1.0, got 1.2", e.getMessage());
        assertArrayEquals(new double[] {0.1, 0.2, 0.3}, opt.lrs);
    }

    @Test
    void apply_validFactor_setsEveryGroup() {
        MuonAdamW opt = hybrid();
        LrScheduler.of(opt, step -> 0.5).apply(7);
        assertEquals(MUON_LR * 0.5, opt.lr(MuonAdamW.MUON_GROUP));
        assertEquals(ADAMW_LR * 0.5, opt.lr(MuonAdamW.ADAMW_GROUP));
        assertEquals(ADAMW_LR * 0.5, opt.adamWConfig().lr());
    }

    /** A training optimizer whose lrs are capped, stricter than {@link TrainingOptimizer#setLr}'s rule. */
    private static final class CappedOptimizer implements TrainingOptimizer {
        final double[] lrs;
        final double cap;

        CappedOptimizer(double[] lrs, double cap) {
            this.lrs = lrs.clone();
            this.cap = cap;
        }

        @Override
        public void step() {
            throw new UnsupportedOperationException("not stepped in this test");
        }

        @Override
        public void zeroGrad() {
            throw new UnsupportedOperationException("not stepped in this test");
        }

        @Override
        public int groupCount() {
            return lrs.length;
        }

        @Override
        public double lr(int group) {
            return lrs[group];
        }

        @Override
        public void setLr(int group, double lr) {
            if (lr > cap) {
                throw new IllegalArgumentException("lr of group " + group + " must be <= " + cap + ", got " + lr);
            }
            lrs[group] = lr;
        }
    }
}
