package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
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
 * A checkpoint of the current format (version 3) written on another machine still loads and continues: the resource
 * {@code checkpoints/gpt-like-step3.ckpt} is a {@link CheckpointTest#hybrid} optimizer over
 * {@code TestModels.gptLike(20, 8, 1)} built after {@code torch.manual_seed(42)} and trained 3 steps by
 * {@link CheckpointTest#train} on a Zen 4 CPU (2026-11-25). A change that stops such a file from loading breaks
 * this test: the format is then a new version, with its own resource.
 *
 * <p>The file's values were computed on another machine, so they are compared with this machine's recomputation
 * of the same run within {@link #RTOL} and {@link #ATOL}, never bit for bit: BLAS and the native kernels sum in
 * other orders on other CPU generations (and with {@code -Ddev.muon.native.disable=true}). What must hold bit for
 * bit is checked on this machine only: two optimizers loaded from the same file continue identically.
 */
@ExtendWith(NativeScopePerTest.class)
class CheckpointFormatTest {
    static final String RESOURCE = "/checkpoints/gpt-like-step3.ckpt";
    /**
     * The project's float32 tolerance. The gradients of {@link CheckpointTest#train} depend on the step only, so
     * only the Newton–Schulz products differ across CPUs (about 1e-7 of a parameter); a lost momentum buffer or
     * AdamW moment moves a parameter by an lr (3e-3 or more), far outside it.
     */
    static final double RTOL = 1e-5;
    static final double ATOL = 1e-6;

    static Map<String, Tensor> seededModel(long seed) {
        torch.manual_seed(seed);
        return TestModels.named(TestModels.gptLike(20, 8, 1));
    }

    @Test
    void fileFromAnotherMachine_loads_andResumesAsTheRecomputedRun() throws Exception {
        Map<String, Tensor> straightNamed = seededModel(42);
        MuonAdamW straight = CheckpointTest.hybrid(straightNamed);
        LrScheduler straightLrs = CheckpointTest.schedule(straight);
        CheckpointTest.train(straight, straightLrs, straightNamed, 3);

        // Another initialisation, as a new process would have, then the old file; twice, for the same-machine check.
        Path file = Path.of(CheckpointFormatTest.class.getResource(RESOURCE).toURI());
        Map<String, Tensor> resumedNamed = seededModel(7);
        MuonAdamW resumed = CheckpointTest.hybrid(resumedNamed);
        LrScheduler resumedLrs = CheckpointTest.schedule(resumed);
        resumed.load(file);
        Map<String, Tensor> againNamed = seededModel(8);
        MuonAdamW again = CheckpointTest.hybrid(againNamed);
        LrScheduler againLrs = CheckpointTest.schedule(again);
        again.load(file);

        assertEquals(3, resumed.stepCount());
        // The file holds its schedule as the first format's text: a resume rebuilds it from that.
        assertEquals(LrSchedule.warmupCosine(5, 20, 0.1), LrScheduler.resume(resumed).schedule());
        assertEquals(straight.lr(0), resumed.lr(0));
        assertEquals(straight.lr(1), resumed.lr(1));
        assertClose(straightNamed, resumedNamed, "after loading");

        CheckpointTest.train(straight, straightLrs, straightNamed, 2);
        CheckpointTest.train(resumed, resumedLrs, resumedNamed, 2);
        CheckpointTest.train(again, againLrs, againNamed, 2);
        // Any difference in restored momentum, moments or AdamW step counts shows up in these values.
        assertClose(straightNamed, resumedNamed, "2 steps after loading");
        assertBitIdentical(resumedNamed, againNamed, "2 steps after loading the same file twice");
    }

    private static void assertClose(Map<String, Tensor> expected, Map<String, Tensor> actual, String when) {
        List<String> names = new ArrayList<>(expected.keySet());
        assertEquals(names, new ArrayList<>(actual.keySet()));
        for (String name : names) {
            Tensor e = expected.get(name);
            Tensor a = actual.get(name);
            double maxDiff = a.sub(e).abs().max().item_double();
            assertTrue(a.allclose(e, RTOL, ATOL, false), name + " differs " + when + " by up to " + maxDiff
                    + " (rtol " + RTOL + ", atol " + ATOL + ")");
        }
    }

    private static void assertBitIdentical(Map<String, Tensor> expected, Map<String, Tensor> actual, String when) {
        for (String name : expected.keySet()) {
            assertTrue(expected.get(name).equal(actual.get(name)), name + " differs " + when);
        }
    }
}
