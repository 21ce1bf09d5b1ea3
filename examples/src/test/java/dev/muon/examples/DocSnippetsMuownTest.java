package dev.muon.examples;

import dev.muon.Muon;
import org.bytedeco.javacpp.PointerScope;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs api.md's Muown snippet ({@link DocSnippets#rowNormMuon}); {@link DocSnippetsTest} checks it is the page's.
 */
class DocSnippetsMuownTest {

    @Test
    void rowNormSnippet_trains() {
        try (PointerScope scope = new PointerScope()) {
            SquaredLossRun run = SquaredLossRun.seeded(9, 1, 64, 32);
            Muon muon = DocSnippets.rowNormMuon(run.weights());
            SquaredLossRun.Losses losses = run.train(5, muon::zeroGrad, muon::step);
            assertTrue(Double.isFinite(losses.last()) && losses.last() < losses.first(),
                    "five steps lower the loss: " + losses.first() + " -> " + losses.last());
        }
    }
}
