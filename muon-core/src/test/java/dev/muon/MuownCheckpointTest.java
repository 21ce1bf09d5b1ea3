package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Muown's state survives both files: trained three steps, saved (muon-core's checkpoint, or a PyTorch state file),
 * loaded into a new optimizer over copies of the parameters, both continue three steps and end bit for bit alike,
 * parameters and every declared buffer (the momentum, the row magnitudes and norms, Adam's moments, the step count).
 * One parameter has no gradient in the first step, so its own step count differs from the optimizer's.
 */
@ExtendWith(NativeScopePerTest.class)
class MuownCheckpointTest {
    private static final MuonConfig CONFIG = MuonConfig.defaults().withLr(0.02).withNesterov(false)
            .withAdjustLr(AdjustLr.MATCH_RMS_ADAMW).withMuown(MuownConfig.defaults());

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"checkpoint", "pytorch"})
    void saveLoadContinue_isBitExact(String format, @TempDir Path dir) {
        torch.manual_seed(11);
        List<Tensor> params = List.of(torch.randn(6, 8).requires_grad_(true), torch.randn(8, 4).requires_grad_(true));
        Muon muon = Muon.builder().addGroup(params, CONFIG).names(List.of("a", "b")).build();
        for (int step = 0; step < 3; step++) {
            grads(params, 20 + step, step == 0);
            muon.step();
        }
        assertEquals(2, muon.state().entry("b").orElseThrow().buffer(UpdateRecipe.MUOWN_STEP.key()).item_double());
        Path file = SavedMuon.save(muon, dir, format);
        List<Tensor> copies = new ArrayList<>();
        Muon resumed = SavedMuon.resumed(params, copies, CONFIG, file, format);
        for (int step = 0; step < 3; step++) {
            grads(params, 40 + step, false);
            muon.step();
            grads(copies, 40 + step, false);
            resumed.step();
        }
        for (String name : List.of("a", "b")) {
            var one = muon.state().entry(name).orElseThrow();
            var other = resumed.state().entry(name).orElseThrow();
            assertTrue(one.value().equal(other.value()), format + ": " + name + " differs");
            assertEquals(UpdateRecipe.of(CONFIG).buffers().size(), one.buffers().size());
            assertEquals(one.buffers().keySet(), other.buffers().keySet());
            for (String key : one.buffers().keySet()) {
                assertTrue(one.buffer(key).equal(other.buffer(key)), format + ": " + name + " " + key + " differs");
            }
        }
    }

    /** The same gradients for a seed; {@code skipSecond}: the second parameter has none this step. */
    private static void grads(List<Tensor> params, int seed, boolean skipSecond) {
        torch.manual_seed(seed);
        for (int i = 0; i < params.size(); i++) {
            Tensor g = torch.randn(params.get(i).shape());
            params.get(i).mutable_grad().put(skipSecond && i == 1 ? new Tensor() : g);
        }
    }
}
