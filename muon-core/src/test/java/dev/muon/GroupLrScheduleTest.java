package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A schedule never clobbers a group's own lr: Muon's and AdamW's groups start from two different base lrs, go
 * through a warm-up, one group's base lr is changed mid-run, and the run is saved and resumed, with the scheduler
 * made before the load (as a training script that builds everything first does) and after it. At every step each
 * group's lr is its own base lr times the schedule's factor, bit for bit, the step applies exactly that lr, and
 * the resumed run ends bit for bit where the straight run does.
 */
@ExtendWith(NativeScopePerTest.class)
class GroupLrScheduleTest {
    private static final LrSchedule SCHEDULE = LrSchedule.warmupCosine(5, 30, 0.1);
    private static final double MUON_BASE = 0.02;
    private static final double ADAMW_BASE = 3e-3;
    /** Muon's new base lr from {@link #CHANGE_AT} on; AdamW's stays. */
    private static final double MUON_CHANGED = 0.01;
    private static final int CHANGE_AT = 8;
    private static final int SAVE_AT = 12;
    private static final int STEPS = 18;

    @TempDir
    Path dir;

    /**
     * Changes Muon's base lr mid-run, AdamW's staying: with the scheduler's {@code setBaseLr}, or (the way before
     * it) with a new scheduler given both base lrs; either is recorded in the optimizer.
     */
    private static LrScheduler changeMuonBase(MuonAdamW opt, LrScheduler lrs, boolean setBaseLr) {
        if (setBaseLr) {
            lrs.setBaseLr(MuonAdamW.MUON_GROUP, MUON_CHANGED);
            return lrs;
        }
        return LrScheduler.of(opt, SCHEDULE, MUON_CHANGED, lrs.baseLr(MuonAdamW.ADAMW_GROUP));
    }

    /**
     * Trains {@code opt} from its step count to {@code until}, checking each step's lrs; changes Muon's base lr at
     * {@link #CHANGE_AT}.
     */
    private static LrScheduler train(MuonAdamW opt, LrScheduler lrs, Map<String, Tensor> named, int until,
                                     boolean setBaseLr) {
        while (opt.stepCount() < until) {
            long step = opt.stepCount();
            if (step == CHANGE_AT) {
                lrs = changeMuonBase(opt, lrs, setBaseLr);
            }
            lrs.apply(step);
            double muonBase = step >= CHANGE_AT ? MUON_CHANGED : MUON_BASE;
            assertEquals(muonBase * SCHEDULE.factor(step), opt.lr(MuonAdamW.MUON_GROUP), "Muon lr at step " + step);
            assertEquals(ADAMW_BASE * SCHEDULE.factor(step), opt.lr(MuonAdamW.ADAMW_GROUP),
                    "AdamW lr at step " + step);
            opt.zeroGrad();
            TestModels.setGradients(named, 1000 + step);
            opt.step();
            // What the step applied: Muon's lr adjusted by the matrix's shape (AdjustLr.ORIGINAL), and AdamW's.
            String muonName = opt.assignment().names(OptimizerKind.MUON).get(0);
            long[] shape = named.get(muonName).shape();
            double applied = muonBase * SCHEDULE.factor(step) * Math.sqrt(Math.max(1.0, (double) shape[0] / shape[1]));
            assertEquals(applied, opt.muonState(muonName).orElseThrow().lastScaledLr(), 1e-12 * applied,
                    "Muon's applied lr at step " + step);
            String adamWName = opt.assignment().names(OptimizerKind.ADAMW).get(0);
            assertEquals(ADAMW_BASE * SCHEDULE.factor(step), opt.adamWState(adamWName).orElseThrow().lastLr(),
                    "AdamW's applied lr at step " + step);
        }
        return lrs;
    }

    @ParameterizedTest(name = "setBaseLr={0}")
    @ValueSource(booleans = {true, false})
    void twoBaseLrs_throughWarmupChangeAndResume_neverClobbered(boolean setBaseLr) {
        Map<String, Tensor> straightNamed = CheckpointFormatTest.seededModel(31);
        MuonAdamW straight = CheckpointTest.hybrid(straightNamed);
        train(straight, LrScheduler.of(straight, SCHEDULE), straightNamed, STEPS, setBaseLr);

        Map<String, Tensor> firstNamed = CheckpointFormatTest.seededModel(31);
        MuonAdamW first = CheckpointTest.hybrid(firstNamed);
        train(first, LrScheduler.of(first, SCHEDULE), firstNamed, SAVE_AT, setBaseLr);
        Path file = dir.resolve("run.ckpt");
        first.save(file);

        for (boolean schedulerBeforeLoad : new boolean[]{true, false}) {
            Map<String, Tensor> named = CheckpointFormatTest.seededModel(32);
            MuonAdamW resumed = CheckpointTest.hybrid(named);
            LrScheduler lrs = schedulerBeforeLoad ? LrScheduler.of(resumed, SCHEDULE) : null;
            resumed.load(file);
            if (!schedulerBeforeLoad) {
                lrs = LrScheduler.of(resumed, SCHEDULE);
            }
            assertArrayEquals(new double[]{MUON_CHANGED, ADAMW_BASE},
                    resumed.scheduleRecord().orElseThrow().initialLrs(), "the record restored");
            assertEquals(MUON_CHANGED, lrs.baseLr(MuonAdamW.MUON_GROUP), "scheduler made before the load: "
                    + schedulerBeforeLoad);
            assertEquals(ADAMW_BASE, lrs.baseLr(MuonAdamW.ADAMW_GROUP), "scheduler made before the load: "
                    + schedulerBeforeLoad);
            train(resumed, lrs, named, STEPS, setBaseLr);
            List<Tensor> expected = new ArrayList<>(straightNamed.values());
            List<Tensor> actual = new ArrayList<>(named.values());
            for (int i = 0; i < expected.size(); i++) {
                assertTrue(expected.get(i).equal(actual.get(i)), "parameter " + i + " differs from the straight "
                        + "run (scheduler made before the load: " + schedulerBeforeLoad + ")");
            }
        }
    }

    /**
     * {@code setBaseLr} changes one group's base lr and leaves the other's, at once in the record; a bad value or
     * group is refused and changes nothing.
     */
    @Test
    void setBaseLr_changesOneGroup_andRefusesBadValues() {
        MuonAdamW opt = CheckpointTest.hybrid(CheckpointFormatTest.seededModel(33));
        LrScheduler lrs = LrScheduler.of(opt, SCHEDULE);
        lrs.setBaseLr(MuonAdamW.ADAMW_GROUP, 1e-3);
        assertArrayEquals(new double[]{MUON_BASE, 1e-3}, opt.scheduleRecord().orElseThrow().initialLrs());
        lrs.apply(10);
        assertEquals(MUON_BASE * SCHEDULE.factor(10), opt.lr(MuonAdamW.MUON_GROUP));
        assertEquals(1e-3 * SCHEDULE.factor(10), opt.lr(MuonAdamW.ADAMW_GROUP));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> lrs.setBaseLr(MuonAdamW.MUON_GROUP, Double.NaN));
        assertEquals("lr of group 0 must be finite and >= 0, got NaN", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> lrs.setBaseLr(2, 0.1));
        assertEquals("group must be in [0, 2), got 2", e.getMessage());
        assertArrayEquals(new double[]{MUON_BASE, 1e-3}, opt.scheduleRecord().orElseThrow().initialLrs());
    }
}
