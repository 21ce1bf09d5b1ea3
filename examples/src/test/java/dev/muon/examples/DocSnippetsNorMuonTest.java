package dev.muon.examples;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs api.md's NorMuon snippet ({@link DocSnippets#norMuon}); {@link DocSnippetsTest} checks it is the page's. */
class DocSnippetsNorMuonTest {

    @Test
    void norMuonSnippet_trains_andKeepsOneSecondMomentPerRow() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(7);
            Tensor w = torch.randn(6, 4).requires_grad_(true);
            Tensor before = w.detach().clone();
            Tensor v = DocSnippets.norMuon(List.of(w), ps -> ps.get(0).pow(new Scalar(2)).sum(), 3);
            assertArrayEquals(new long[]{6}, v.shape());
            assertEquals(torch.ScalarType.Float.value, v.scalar_type().value);
            assertTrue(v.min().item_double() > 0, "every row has a second moment");
            assertTrue(w.detach().pow(new Scalar(2)).sum().item_double() < before.pow(new Scalar(2)).sum()
                    .item_double(), "three steps lower the loss");
        }
    }
}
