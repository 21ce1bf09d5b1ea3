package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.CraftedCheckpoints;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
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
 * {@code [0, step]}, is refused before anything changes. The files are good checkpoints with their state document
 * edited (and a valid checksum), as a hand-edited or damaged writer's file would be.
 */
@ExtendWith(NativeScopePerTest.class)
class CheckpointStoredScalarsTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "step {0}")
    @ValueSource(longs = {-1, -5, Long.MIN_VALUE})
    void negativeStep_isRefused_andChangesNothing(long step) {
        Path good = saved(3);
        Path file = CraftedCheckpoints.edited(good, dir.resolve("negative.ckpt"), meta -> { },
                doc -> doc.put("step", step));

        MuonAdamW target = CheckpointTest.trained(2);
        Map<String, Tensor> before = CheckpointTest.stateOf(target);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertEquals("checkpoint " + file + ": __metadata__.state.step must be >= 0, got " + step + "; nothing was "
                + "changed", e.getMessage());
        CheckpointTest.assertStateUnchanged(target, 2, before);
    }

    /** AdamW's own per-parameter step counts cannot exceed the optimizer's: a file saying so is damaged. */
    @Test
    @SuppressWarnings("unchecked")
    void adamWStepAboveTheCheckpointsStep_isRefused_andChangesNothing() {
        Path good = saved(3);
        Path file = CraftedCheckpoints.edited(good, dir.resolve("adamw-ahead.ckpt"), meta -> { },
                doc -> doc.put("step", 2L));

        MuonAdamW target = CheckpointTest.trained(2);
        Map<String, Tensor> before = CheckpointTest.stateOf(target);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertTrue(e.getMessage().startsWith("checkpoint " + file + " does not fit this optimizer (2 differences): "
                + "'embed.weight' AdamW step: this optimizer in [0, 2] (the state's step), the state 3; "
                + "'fc1.bias' AdamW step"), e.getMessage());
        CheckpointTest.assertStateUnchanged(target, 2, before);
    }

    private Path saved(int steps) {
        Path file = dir.resolve("good-" + steps + ".ckpt");
        CheckpointTest.trained(steps).save(file);
        return file;
    }
}
