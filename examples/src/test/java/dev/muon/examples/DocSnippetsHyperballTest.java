package dev.muon.examples;

import dev.muon.Muon;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs api.md's Hyperball snippet ({@link DocSnippets#sphereMuon}); {@link DocSnippetsTest} checks it is the page's.
 */
class DocSnippetsHyperballTest {

    @Test
    void sphereSnippet_trains_andKeepsEachWeightsNorm() {
        try (PointerScope scope = new PointerScope()) {
            SquaredLossRun run = SquaredLossRun.seeded(8, 1, 64, 32);
            Tensor w = run.weights().get(0);
            double norm = w.norm().item_double();
            Muon muon = DocSnippets.sphereMuon(run.weights());
            SquaredLossRun.Losses losses = run.train(5, muon::zeroGrad, muon::step);
            assertEquals(norm, w.norm().item_double(), 1e-4 * norm, "the weight stays on its sphere");
            assertTrue(losses.last() < losses.first(), "five steps lower the loss: " + losses.first() + " -> "
                    + losses.last());
        }
    }
}
