package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A checkpoint written by the code of 2026-11-23 (format version 1, commit f0549c2) still loads: the resource
 * {@code checkpoints/v1-gpt-like-step3.ckpt} is a {@link CheckpointTest#hybrid} optimizer over
 * {@code TestModels.gptLike(20, 8, 1)} built after {@code torch.manual_seed(42)} and trained 3 steps by
 * {@link CheckpointTest#train}. This test recomputes that run and checks that loading the old file gives the same
 * parameters, step and lrs, and that 2 more steps from it equal 2 more steps of the recomputed run, bit for bit.
 */
@ExtendWith(NativeScopePerTest.class)
class CheckpointFormatV1Test {
    static final String RESOURCE = "/checkpoints/v1-gpt-like-step3.ckpt";

    static Map<String, Tensor> seededModel(long seed) {
        torch.manual_seed(seed);
        return TestModels.named(TestModels.gptLike(20, 8, 1));
    }

    @Test
    void version1File_loads_andResumesBitForBit() throws Exception {
        Map<String, Tensor> straightNamed = seededModel(42);
        MuonAdamW straight = CheckpointTest.hybrid(straightNamed);
        LrScheduler straightLrs = CheckpointTest.schedule(straight);
        CheckpointTest.train(straight, straightLrs, straightNamed, 3);

        // Another initialisation, as a new process would have, then the old file.
        Map<String, Tensor> resumedNamed = seededModel(7);
        MuonAdamW resumed = CheckpointTest.hybrid(resumedNamed);
        LrScheduler resumedLrs = CheckpointTest.schedule(resumed);
        resumed.load(Path.of(CheckpointFormatV1Test.class.getResource(RESOURCE).toURI()));

        assertEquals(3, resumed.stepCount());
        assertEquals(straight.lr(0), resumed.lr(0));
        assertEquals(straight.lr(1), resumed.lr(1));
        assertSameValues(straightNamed, resumedNamed, "after loading");

        CheckpointTest.train(straight, straightLrs, straightNamed, 2);
        CheckpointTest.train(resumed, resumedLrs, resumedNamed, 2);
        // Any difference in restored momentum, moments or AdamW step counts shows up in these values.
        assertSameValues(straightNamed, resumedNamed, "2 steps after loading");
    }

    private static void assertSameValues(Map<String, Tensor> expected, Map<String, Tensor> actual, String when) {
        List<String> names = new ArrayList<>(expected.keySet());
        assertEquals(names, new ArrayList<>(actual.keySet()));
        for (String name : names) {
            assertTrue(expected.get(name).equal(actual.get(name)), name + " differs " + when);
        }
    }
}
