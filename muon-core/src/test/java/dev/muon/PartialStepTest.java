package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.OptimizerState;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A step that fails after it has begun changing parameters (a device kernel failing in the second parameter's
 * update, simulated by {@link RecordingFusedKernelsProvider}): the state it leaves is exactly what the docs say
 * (api.md, "When a step fails part-way"), and the optimizer refuses to step, save or hand out its state until a
 * restore; after one it continues as an optimizer restored from that state does.
 */
@ExtendWith(NativeScopePerTest.class)
class PartialStepTest {
    private static final MuonConfig CONFIG = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1);

    @TempDir
    Path dir;

    private static List<Tensor> parameters() {
        torch.manual_seed(11);
        // Three wide shapes: no same-shape batch, so the updates run one by one in this order, each through the
        // provider's update stage (which declines a tall parameter's transposed result).
        return List.of(torch.randn(4, 6).requires_grad_(true), torch.randn(5, 7).requires_grad_(true),
                torch.randn(3, 8).requires_grad_(true));
    }

    private static void gradients(List<Tensor> params, long seed) {
        torch.manual_seed(seed);
        for (Tensor p : params) {
            p.mutable_grad().put(torch.randn(p.shape()));
        }
    }

    private static List<Tensor> copies(List<Tensor> tensors) {
        List<Tensor> out = new ArrayList<>();
        for (Tensor t : tensors) {
            out.add(t.detach().clone());
        }
        return out;
    }

    /** Copies of {@code params}' momentum buffers, in their order. */
    private static List<Tensor> momenta(Muon muon, List<Tensor> params) {
        List<Tensor> out = new ArrayList<>();
        for (Tensor p : params) {
            out.add(muon.momentumBuffer(p).orElseThrow().clone());
        }
        return out;
    }

    /** {@code params}' Muon, built while {@code recorder} serves the fused kernels, so that its steps go through it. */
    private static Muon muon(List<Tensor> params, RecordingFusedKernelsProvider.Recorder recorder) {
        try (recorder) {
            return Muon.of(params, CONFIG);
        }
    }

    /** A Muon built under a recorder, after the step with gradients 1, and the recorder that can fail its kernels. */
    private record SteppedOnce(Muon muon, RecordingFusedKernelsProvider.Recorder recorder) {
    }

    private static SteppedOnce steppedOnce(List<Tensor> params) {
        RecordingFusedKernelsProvider.Recorder recorder = RecordingFusedKernelsProvider.serving(m -> true);
        Muon muon = muon(params, recorder);
        gradients(params, 1);
        muon.step();
        return new SteppedOnce(muon, recorder);
    }

    @Test
    void muon_failingPartWay_leavesTheDocumentedState_andRefusesUntilRestored() throws Exception {
        List<Tensor> params = parameters();
        SteppedOnce stepped = steppedOnce(params);
        Muon muon = stepped.muon();
        RecordingFusedKernelsProvider.Recorder recorder = stepped.recorder();
        Path saved = dir.resolve("step1.ckpt");
        muon.save(saved);
        OptimizerState afterOne = muon.state();
        List<Tensor> before = copies(params);
        List<Tensor> momentumBefore = momenta(muon, params);

        gradients(params, 2);
        recorder.failingUpdateCall = recorder.updateCalls + 2;
        IllegalStateException failure = assertThrows(IllegalStateException.class, muon::step);
        assertEquals("simulated device failure in update call " + recorder.failingUpdateCall, failure.getMessage());

        // What api.md says remains: the parameters before the failing one have this step's update and momentum,
        // the failing one its new momentum but not its update, the rest nothing; the step count is the old one.
        assertFalse(torch.equal(before.get(0), params.get(0).detach()), "parameter 0 was updated");
        assertFalse(torch.equal(momentumBefore.get(0), muon.momentumBuffer(params.get(0)).orElseThrow()));
        assertTrue(torch.equal(before.get(1), params.get(1).detach()), "parameter 1 was not updated");
        assertFalse(torch.equal(momentumBefore.get(1), muon.momentumBuffer(params.get(1)).orElseThrow()),
                "parameter 1's momentum advanced");
        assertTrue(torch.equal(before.get(2), params.get(2).detach()), "parameter 2 was not touched");
        assertTrue(torch.equal(momentumBefore.get(2), muon.momentumBuffer(params.get(2)).orElseThrow()));
        assertEquals(1, muon.stepCount());

        String refusal = "refused: step 2 failed after it had begun changing parameters (" + failure
                + "), so parameters and optimizer state are part-way through that step; restore a saved state "
                + "first (load or restore, or importTorchStateDict together with the model's weights)";
        Path other = dir.resolve("partial.ckpt");
        Map<String, Executable> refused = new LinkedHashMap<>();
        refused.put("step", muon::step);
        refused.put("save", () -> muon.save(other));
        refused.put("state", muon::state);
        refused.put("exportTorchStateDict", () -> muon.exportTorchStateDict(dir.resolve("partial.pt")));
        List<Tensor> partial = copies(params);
        for (Map.Entry<String, Executable> call : refused.entrySet()) {
            IllegalStateException e = assertThrows(IllegalStateException.class, call.getValue());
            assertEquals("Muon." + call.getKey() + "() " + refusal, e.getMessage());
            assertSame(failure, e.getCause());
        }
        assertFalse(Files.exists(other), "a refused save writes nothing");
        for (int i = 0; i < params.size(); i++) {
            assertTrue(torch.equal(partial.get(i), params.get(i).detach()), "a refused call changed parameter " + i);
        }

        // A restore makes it whole: the same step then gives what it gives an optimizer restored from that state.
        muon.load(saved);
        recorder.failingUpdateCall = 0;
        gradients(params, 2);
        muon.step();
        assertEquals(2, muon.stepCount());

        List<Tensor> twins = copies(parameters());
        for (Tensor t : twins) {
            t.requires_grad_(true);
        }
        Muon twin = muon(twins, RecordingFusedKernelsProvider.serving(m -> true));
        twin.restore(afterOne);
        gradients(twins, 2);
        twin.step();
        for (int i = 0; i < params.size(); i++) {
            assertTrue(torch.equal(twins.get(i).detach(), params.get(i).detach()), "parameter " + i);
        }
    }

    @Test
    void muon_restoreFromState_clearsThePartialStep() {
        List<Tensor> params = parameters();
        SteppedOnce stepped = steppedOnce(params);
        Muon muon = stepped.muon();
        RecordingFusedKernelsProvider.Recorder recorder = stepped.recorder();
        OptimizerState whole = muon.state();
        recorder.failingUpdateCall = recorder.updateCalls + 1;
        gradients(params, 2);
        assertThrows(IllegalStateException.class, muon::step);
        assertThrows(IllegalStateException.class, muon::step);
        muon.restore(whole);
        muon.step();
        assertEquals(2, muon.stepCount());
    }

    @Test
    void rejectedStep_changesNothing_andLeavesTheOptimizerUsable() {
        List<Tensor> params = parameters();
        Muon muon = Muon.of(params, CONFIG);
        gradients(params, 1);
        params.get(2).mutable_grad().put(torch.randn(8, 3));
        List<Tensor> before = copies(params);
        assertThrows(IllegalStateException.class, muon::step);
        for (int i = 0; i < params.size(); i++) {
            assertTrue(torch.equal(before.get(i), params.get(i).detach()));
        }
        gradients(params, 1);
        muon.step();
        assertEquals(1, muon.stepCount());
    }

    @Test
    void muonAdamW_failingPartWay_refusesUntilLoaded() throws Exception {
        torch.manual_seed(5);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("fc1.weight", torch.randn(4, 6).requires_grad_(true));
        named.put("fc2.weight", torch.randn(5, 7).requires_grad_(true));
        named.put("fc2.bias", torch.randn(5).requires_grad_(true));
        List<Tensor> all = new ArrayList<>(named.values());
        MuonAdamW optimizer;
        RecordingFusedKernelsProvider.Recorder recorder = RecordingFusedKernelsProvider.serving(m -> true);
        try (recorder) {
            optimizer = MuonAdamW.builder(named).muon(CONFIG).outputLayerOnAdamW(false).build();
        }
        gradients(all, 1);
        optimizer.step();
        Path saved = dir.resolve("hybrid.ckpt");
        optimizer.save(saved);
        Tensor biasBefore = named.get("fc2.bias").detach().clone();

        recorder.failingUpdateCall = recorder.updateCalls + 2;
        gradients(all, 2);
        IllegalStateException failure = assertThrows(IllegalStateException.class, optimizer::step);
        // Muon runs first: AdamW's parameters are untouched.
        assertTrue(torch.equal(biasBefore, named.get("fc2.bias").detach()));
        assertEquals(1, optimizer.stepCount());
        for (Executable call : List.<Executable>of(optimizer::step, () -> optimizer.save(dir.resolve("x.ckpt")),
                optimizer::state)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, call);
            assertTrue(e.getMessage().startsWith("MuonAdamW.") && e.getMessage().contains("refused: step 2 failed"),
                    e.getMessage());
            assertSame(failure, e.getCause());
        }
        optimizer.load(saved);
        recorder.failingUpdateCall = 0;
        gradients(all, 2);
        optimizer.step();
        assertEquals(2, optimizer.stepCount());
    }

    /**
     * A same-shape batch runs at its first member's place in group order: when it fails, the parameters after it in
     * group order have not moved (they used to: unbatched parameters were updated before every batch).
     */
    @Test
    void muon_failingInABatch_leavesTheLaterParametersInGroupOrderUnmoved() {
        torch.manual_seed(5);
        // a and c share a shape and form a batch at a's place; b, between them, is updated on its own after it.
        List<Tensor> params = List.of(torch.randn(4, 6).requires_grad_(true), torch.randn(5, 7).requires_grad_(true),
                torch.randn(4, 6).requires_grad_(true));
        Muon muon;
        RecordingFusedKernelsProvider.Recorder recorder = RecordingFusedKernelsProvider.serving(m -> true);
        try (recorder) {
            muon = Muon.of(params, CONFIG);
            gradients(params, 1);
            muon.step();
            assertEquals(2, muon.batchedLastStep(), "a and c ran as one batch");
            List<Tensor> before = copies(params);
            List<Tensor> momentumBefore = momenta(muon, params);
            gradients(params, 2);
            // The batch's second update: c's.
            recorder.failingUpdateCall = recorder.updateCalls + 2;
            assertThrows(IllegalStateException.class, muon::step);
            assertFalse(torch.equal(before.get(0), params.get(0).detach()), "a, the batch's first member, moved");
            assertTrue(torch.equal(before.get(2), params.get(2).detach()), "c, the failing member, did not move");
            assertFalse(torch.equal(momentumBefore.get(2), muon.momentumBuffer(params.get(2)).orElseThrow()),
                    "c's momentum advanced with the batch");
            assertTrue(torch.equal(before.get(1), params.get(1).detach()), "b, after the batch, did not move");
            assertTrue(torch.equal(momentumBefore.get(1), muon.momentumBuffer(params.get(1)).orElseThrow()),
                    "b's momentum did not advance");
        }
    }
}
