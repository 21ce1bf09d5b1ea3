package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every scalar a checkpoint stores is validated on load: a step count below zero, or an AdamW step count outside
 * {@code [0, step]}, is refused before anything changes. The files are written through {@link Checkpoint#write}
 * with a doctored {@link CheckpointState}, as a corrupted or hand-edited file would hold them.
 */
@ExtendWith(NativeScopePerTest.class)
class CheckpointStoredScalarsTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "step {0}")
    @ValueSource(longs = {-1, -5, Long.MIN_VALUE})
    void negativeStep_isRefused_andChangesNothing(long step) {
        MuonAdamW saved = trained(3);
        Path file = dir.resolve("negative.ckpt");
        writeWithStep(saved, step, file);

        MuonAdamW target = trained(2);
        Map<String, Tensor> before = CheckpointTest.stateOf(target);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertEquals("checkpoint " + file + " holds step " + step + "; a step count must be >= 0", e.getMessage());
        assertUnchanged(target, 2, before);
    }

    /** AdamW's own per-parameter step counts cannot exceed the optimizer's: a file saying so is corrupt. */
    @org.junit.jupiter.api.Test
    void adamWStepAboveTheCheckpointsStep_isRefused_andChangesNothing() {
        MuonAdamW saved = trained(3);
        Path file = dir.resolve("adamw-ahead.ckpt");
        writeWithStep(saved, 2, file);

        MuonAdamW target = trained(2);
        Map<String, Tensor> before = CheckpointTest.stateOf(target);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertEquals("checkpoint " + file + ": 'embed.weight' has AdamW step 3; it must be in [0, 2], the "
                + "checkpoint's step", e.getMessage());
        assertUnchanged(target, 2, before);
    }

    private static MuonAdamW trained(int steps) {
        Map<String, Tensor> named = CheckpointTest.small(org.bytedeco.pytorch.global.torch.ScalarType.Float, 5);
        MuonAdamW opt = CheckpointTest.hybrid(named);
        for (int i = 0; i < steps; i++) {
            TestModels.setGradients(named, 40 + i);
            opt.step();
        }
        return opt;
    }

    private static void writeWithStep(MuonAdamW opt, long step, Path file) {
        CheckpointState s = opt.checkpointState();
        Checkpoint.write(file, new CheckpointState(step, s.muonConfigs(), s.adamWConfig(), s.layout(), s.muonNames(),
                s.muonParams(), s.muonMomentum(), s.adamWNames(), s.adamWParams(), s.adamW(), s.schedule()));
    }

    private static void assertUnchanged(MuonAdamW opt, long step, Map<String, Tensor> before) {
        assertEquals(step, opt.stepCount());
        Map<String, Tensor> after = CheckpointTest.stateOf(opt);
        assertEquals(before.keySet(), after.keySet());
        for (String key : before.keySet()) {
            assertTrue(before.get(key).equal(after.get(key)), key + " changed");
        }
    }
}
