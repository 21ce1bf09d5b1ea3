package dev.muon.examples;

import dev.muon.Muon;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs api.md's weight-hook snippet ({@link DocSnippetsWeightHooks#hookedMuons}): both optimizers train, and the
 * floored one's every step moves each row by at least the lr times the floor's share of its norm.
 */
class DocSnippetsWeightHooksTest {

    @Test
    void hookSnippet_trains_andTheFloorHoldsPerRow() {
        try (PointerScope scope = new PointerScope()) {
            SquaredLossRun run = SquaredLossRun.seeded(9, 2, 32, 16);
            List<Muon> muons = DocSnippetsWeightHooks.hookedMuons(run.weights());
            Tensor floored = run.weights().get(1);
            SquaredLossRun.Losses losses = run.train(5, () -> muons.forEach(Muon::zeroGrad), () -> {
                Tensor before = floored.detach().clone();
                muons.forEach(Muon::step);
                Tensor moved = torch.linalg_vector_norm(floored.detach().sub(before), new Scalar(2), new long[]{1},
                        false, new ScalarTypeOptional());
                Tensor rows = torch.linalg_vector_norm(before, new Scalar(2), new long[]{1}, false,
                        new ScalarTypeOptional());
                // Each row's step Δ is at least lr·0.35 of the row's norm (the floor bounds the update per unit of
                // lr); the decay moves the row by lr·wd of its norm too, at most against Δ:
                // ‖Δ + lr·wd·p‖ ≥ lr·(0.35 − 0.1)·‖p‖ (float32 rounding aside).
                assertTrue(moved.div(rows).min().item_double() >= 0.02 * (0.35 - 0.1) * (1 - 1e-5),
                        "every row moves by at least the floor: " + moved.div(rows).min().item_double());
            });
            assertTrue(losses.last() < losses.first(), "five steps lower the loss: " + losses.first() + " -> "
                    + losses.last());
        }
    }
}
