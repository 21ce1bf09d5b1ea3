package dev.muon.examples;

import dev.muon.MuonAdamW;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs the QK-Clip snippets of {@code docs/api.md} ({@link DocSnippetsQkClip}). */
class DocSnippetsQkClipTest {
    private static Map<String, Tensor> attentionModel() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        for (String name : List.of("attn.q.weight", "attn.k.weight", "attn.v.weight")) {
            named.put(name, torch.randn(32, 32).div(new Scalar(4)).requires_grad_(true));
        }
        named.put("head.weight", torch.randn(10, 32).div(new Scalar(4)).requires_grad_(true));
        return named;
    }

    @Test
    void qkClipSnippet_trainsAndReportsEveryStep() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(6);
            Map<String, Tensor> named = attentionModel();
            MuonAdamW trained = DocSnippetsQkClip.qkClipRun(named, torch.randn(12, 32),
                    torch.randint(10, new long[]{12}), 3);
            assertEquals(3, trained.stepCount());
        }
    }

    /** Without gradients the step moves nothing, so the clip alone acts on the weight. */
    @Test
    void fusedSnippet_clipsTheQueryRowsOfAHeadOverTau() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(7);
            Tensor qkv = torch.randn(96, 32).requires_grad_(true);
            Tensor before = qkv.detach().clone();
            Map<String, Tensor> named = new LinkedHashMap<>();
            named.put("attn.qkv.weight", qkv);
            double[] logits = new double[8];
            logits[3] = 200;
            DocSnippetsQkClip.qkClipFused(named, List.of(qkv), Tensor.create(logits));
            // Query head 3 (rows 12..15) scaled by γ = 50/200, all of it: its key head is shared.
            assertTrue(qkv.detach().narrow(0, 12, 4).allclose(before.narrow(0, 12, 4).mul(new Scalar(0.25))));
            assertTrue(qkv.detach().narrow(0, 0, 12).equal(before.narrow(0, 0, 12)));
            assertTrue(qkv.detach().narrow(0, 16, 80).equal(before.narrow(0, 16, 80)));
        }
    }
}
