package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.schedule.LibtorchOptimizer;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import dev.muon.schedule.ScheduleRecord;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Schedules across a resume: the base lrs travel in the checkpoint ({@link ScheduleRecord}), so a scheduler made
 * after {@code load} continues the run exactly; and libtorch's own optimizers are driven through
 * {@link LibtorchOptimizer#of}.
 */
@ExtendWith(NativeScopePerTest.class)
class LrSchedulerResumeTest {
    @TempDir
    Path dir;

    private static final LrSchedule SCHEDULE = LrSchedule.warmupCosine(5, 20, 0.1);

    private static List<Tensor> values(Map<String, Tensor> named) {
        List<Tensor> out = new ArrayList<>();
        named.values().forEach(p -> out.add(p.detach().clone()));
        return out;
    }

    /** A scheduler made after the load, as a new process would, scales the saved base lrs (not the saved lrs). */
    @Test
    void schedulerMadeAfterLoad_resumesExactly() {
        Map<String, Tensor> straightNamed = CheckpointFormatTest.seededModel(11);
        MuonAdamW straight = CheckpointTest.hybrid(straightNamed);
        CheckpointTest.train(straight, LrScheduler.of(straight, SCHEDULE), straightNamed, 20);

        Map<String, Tensor> firstNamed = CheckpointFormatTest.seededModel(11);
        MuonAdamW first = CheckpointTest.hybrid(firstNamed);
        CheckpointTest.train(first, LrScheduler.of(first, SCHEDULE), firstNamed, 10);
        Path file = dir.resolve("run.ckpt");
        first.save(file);

        for (boolean resume : new boolean[]{false, true}) {
            Map<String, Tensor> named = CheckpointFormatTest.seededModel(12);
            MuonAdamW resumed = CheckpointTest.hybrid(named);
            resumed.load(file);
            assertArrayEquals(new double[]{0.02, 3e-3}, resumed.scheduleRecord().orElseThrow().initialLrs());
            LrScheduler lrs = resume ? LrScheduler.resume(resumed) : LrScheduler.of(resumed, SCHEDULE);
            assertEquals(0.02, lrs.baseLr(0), "not the scheduled lr of step 10");
            CheckpointTest.train(resumed, lrs, named, 10);
            List<Tensor> expected = values(straightNamed);
            List<Tensor> actual = values(named);
            for (int i = 0; i < expected.size(); i++) {
                assertTrue(expected.get(i).equal(actual.get(i)), "parameter " + i + " differs (resume=" + resume
                        + ")");
            }
        }
    }

    @Test
    void muon_keepsItsScheduleRecordInCheckpoints() {
        List<Tensor> p = MuonCheckpointTest.params(1);
        Muon muon = MuonCheckpointTest.muon(p);
        LrScheduler.of(muon, SCHEDULE).apply(7);
        Path file = dir.resolve("muon.ckpt");
        muon.save(file);
        Muon other = MuonCheckpointTest.muon(MuonCheckpointTest.params(2));
        other.load(file);
        assertEquals(ScheduleRecord.of(new double[]{0.02, 0.01}, SCHEDULE), other.scheduleRecord().orElseThrow());
        assertEquals(ScheduleRecord.Source.BUILT_IN, other.scheduleRecord().orElseThrow().source());
        assertEquals(0.02, LrScheduler.resume(other).baseLr(0));
    }

    /**
     * A checkpoint saved before any scheduler ran holds no record (as a PyTorch state file never does): the run's
     * own record stays, or the loaded lrs become the base.
     */
    @Test
    void checkpointWithoutRecord_keepsARecordMadeBefore_orTakesTheLoadedLrs() {
        Map<String, Tensor> savedModel = CheckpointTest.small(torch.ScalarType.Float, 5);
        MuonAdamW saved = CheckpointTest.hybrid(savedModel);
        saved.setLr(0, 0.03);
        Path withoutRecord = dir.resolve("no-record.ckpt");
        saved.save(withoutRecord);
        MuonAdamW before = CheckpointTest.hybrid(CheckpointTest.small(torch.ScalarType.Float, 5));
        LrScheduler.of(before, SCHEDULE);
        before.load(withoutRecord);
        assertArrayEquals(new double[]{0.02, 3e-3}, before.scheduleRecord().orElseThrow().initialLrs());

        MuonAdamW after = CheckpointTest.hybrid(CheckpointTest.small(torch.ScalarType.Float, 5));
        after.load(withoutRecord);
        assertEquals(0.03, after.lr(0));
        ScheduleRecord record = after.scheduleRecord().orElseThrow();
        assertArrayEquals(new double[]{after.lr(0), after.lr(1)}, record.initialLrs());
        assertEquals(ScheduleRecord.Source.UNKNOWN, record.source());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> LrScheduler.resume(after));
        assertEquals("the optimizer's schedule is unknown (restored from a state without a schedule record), not a "
                + "built-in one; pass the schedule to LrScheduler.of", e.getMessage());
    }

    @Test
    void libtorchAdamW_isDrivenByTheSameSchedule() {
        Tensor w = torch.randn(4, 3).requires_grad_(true);
        AdamW adamW = new AdamW(new TensorVector(w), new AdamWOptions(3e-3));
        TrainingOptimizer baseline = LibtorchOptimizer.of(adamW);
        assertEquals(1, baseline.groupCount());
        LrScheduler lrs = LrScheduler.of(baseline, SCHEDULE);
        for (long step = 0; step < 25; step++) {
            lrs.apply(step);
            assertEquals(3e-3 * SCHEDULE.factor(step), adamW.param_groups().get(0).options().get_lr(), 1e-18);
            baseline.zeroGrad();
            w.mutable_grad().put(torch.randn(4, 3));
            baseline.step();
        }
        assertTrue(baseline.scheduleRecord().isEmpty(), "a libtorch optimizer keeps no record");
    }

    @Test
    void resume_withoutARecord_isRefused() {
        MuonAdamW opt = CheckpointTest.hybrid(CheckpointFormatTest.seededModel(3));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> LrScheduler.resume(opt));
        assertEquals("the optimizer holds no schedule record: no LrScheduler was made for it, and none was loaded",
                e.getMessage());
    }

    static Stream<Arguments> badRecords() {
        LrSchedule custom = step -> 1.0;
        return Stream.of(
                Arguments.of("negativeLr_isRejected", new double[]{-1e-3}, ScheduleRecord.Source.BUILT_IN, SCHEDULE,
                        "initialLrs[0] must be finite and >= 0, got -0.001"),
                Arguments.of("nanLr_isRejected", new double[]{0.1, Double.NaN}, ScheduleRecord.Source.CUSTOM, null,
                        "initialLrs[1] must be finite and >= 0, got NaN"),
                Arguments.of("builtInWithoutSchedule_isRejected", new double[]{0.1}, ScheduleRecord.Source.BUILT_IN,
                        null, "schedule must be set exactly for a BUILT_IN record, got none for BUILT_IN"),
                Arguments.of("customWithSchedule_isRejected", new double[]{0.1}, ScheduleRecord.Source.CUSTOM,
                        SCHEDULE, "schedule must be set exactly for a BUILT_IN record, got one for CUSTOM"),
                Arguments.of("builtInLambda_isRejected", new double[]{0.1}, ScheduleRecord.Source.BUILT_IN, custom,
                        "schedule must be one of LrSchedule's built-in schedules, got a " + custom.getClass()
                                .getName()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badRecords")
    void badRecord_isRejected(String name, double[] lrs, ScheduleRecord.Source source, LrSchedule schedule,
                              String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ScheduleRecord(lrs, source, schedule));
        assertEquals(message, e.getMessage());
    }

    @Test
    void recordOfTheWrongGroupCount_isRejected() {
        MuonAdamW opt = CheckpointTest.hybrid(CheckpointFormatTest.seededModel(3));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> opt.recordSchedule(ScheduleRecord.of(new double[]{0.1}, step -> 1.0)));
        assertEquals("record must hold one base lr per group (2), got 1", e.getMessage());
        assertTrue(opt.scheduleRecord().isEmpty());
    }
}
