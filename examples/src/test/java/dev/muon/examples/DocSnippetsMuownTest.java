package dev.muon.examples;

import dev.muon.Muon;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs api.md's Muown snippet ({@link DocSnippets#rowNormMuon}); {@link DocSnippetsTest} checks it is the page's.
 */
class DocSnippetsMuownTest {

    @Test
    void rowNormSnippet_trains() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(9);
            Tensor w = torch.randn(64, 32).requires_grad_(true);
            Tensor target = torch.randn(64, 32);
            Muon muon = DocSnippets.rowNormMuon(List.of(w));
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
            assertTrue(Double.isFinite(last) && last < first, "five steps lower the loss: " + first + " -> " + last);
        }
    }
}
