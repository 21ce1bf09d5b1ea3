package dev.muon.examples;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs api.md's cautious-decay and bfloat16-momentum snippet ({@link DocSnippets#leanMuon}); {@link DocSnippetsTest}
 * checks it is the page's.
 */
class DocSnippetsLeanMuonTest {

    @Test
    void leanSnippet_trains_withHalfTheMomentumBytes() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(7);
            Tensor w = torch.randn(64, 32).requires_grad_(true);
            Tensor twin = w.detach().clone().requires_grad_(true);
            Tensor before = w.detach().clone();
            Muon lean = DocSnippets.leanMuon(List.of(w));
            Muon plain = Muon.of(List.of(twin), MuonConfig.defaults().withLr(0.02));
            for (int step = 0; step < 3; step++) {
                for (Muon muon : List.of(lean, plain)) {
                    Tensor p = muon == lean ? w : twin;
                    muon.zeroGrad();
                    p.pow(new Scalar(2)).sum().backward();
                    muon.step();
                }
            }
            Tensor buffer = lean.momentumBuffer(w).orElseThrow();
            assertEquals(torch.ScalarType.BFloat16.value, buffer.scalar_type().value);
            assertEquals(plain.stateBytes() / 2, lean.stateBytes(), "bfloat16 momentum halves a float32 state");
            assertTrue(w.detach().pow(new Scalar(2)).sum().item_double() < before.pow(new Scalar(2)).sum()
                    .item_double(), "three steps lower the loss");
        }
    }
}
