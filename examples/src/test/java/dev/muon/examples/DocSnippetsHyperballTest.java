package dev.muon.examples;

import dev.muon.Muon;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs api.md's Hyperball snippet ({@link DocSnippets#sphereMuon}); {@link DocSnippetsTest} checks it is the page's.
 */
class DocSnippetsHyperballTest {

    @Test
    void sphereSnippet_trains_andKeepsEachWeightsNorm() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(8);
            Tensor w = torch.randn(64, 32).requires_grad_(true);
            Tensor target = torch.randn(64, 32);
            double norm = w.norm().item_double();
            Muon muon = DocSnippets.sphereMuon(List.of(w));
            double first = Double.NaN;
            double last = Double.NaN;
            for (int step = 0; step < 5; step++) {
                muon.zeroGrad();
                Tensor loss = w.sub(target).pow(new Scalar(2)).sum();
                last = loss.item_double();
                first = step == 0 ? last : first;
                loss.backward();
                muon.step();
            }
            assertEquals(norm, w.norm().item_double(), 1e-4 * norm, "the weight stays on its sphere");
            assertTrue(last < first, "five steps lower the loss: " + first + " -> " + last);
        }
    }
}
