package dev.muon.examples;

import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.QkClip;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.List;
import java.util.Map;

/**
 * The QK-Clip snippets of {@code docs/api.md}, compiled here and run by {@link DocSnippetsQkClipTest}; like
 * {@link DocSnippets}, every {@code java} block of the page must be a piece of one of these files.
 */
final class DocSnippetsQkClip {
    private DocSnippetsQkClip() {
    }

    /** One attention layer (attn.q/k/v.weight, [32, 32] each, 4 heads of 8) and a head.weight [10, 32]. */
    static MuonAdamW qkClipRun(Map<String, Tensor> named, Tensor x, Tensor targets, int steps) {
        int heads = 4;
        int headDim = 8;
        QkClip clip = QkClip.builder(named)
                .tau(100)                                     // Kimi K2's threshold (the default)
                .layer("attn", "attn.q.weight", "attn.k.weight", QkClip.Heads.of(heads, headDim))
                .build();
        MuonAdamW optimizer = MuonAdamW.builder(named).qkClip(clip).build();
        for (int step = 0; step < steps; step++) {
            try (PointerScope scope = new PointerScope()) {
                optimizer.zeroGrad();
                Tensor q = x.matmul(named.get("attn.q.weight").t()).view(-1, heads, headDim).transpose(0, 1);
                Tensor k = x.matmul(named.get("attn.k.weight").t()).view(-1, heads, headDim).transpose(0, 1);
                Tensor v = x.matmul(named.get("attn.v.weight").t()).view(-1, heads, headDim).transpose(0, 1);
                Tensor logits = q.matmul(k.transpose(1, 2)).div(new Scalar(Math.sqrt(headDim))); // [heads, T, T]
                clip.report("attn", logits.detach().amax(new long[]{1, 2}, false));     // largest logit per head
                Tensor mixed = torch.softmax(logits, -1).matmul(v).transpose(0, 1).reshape(x.size(0), -1);
                Tensor loss = torch.cross_entropy(mixed.matmul(named.get("head.weight").t()), targets);
                loss.backward();
                optimizer.step();                             // the update, then the rescale of heads over tau
            }
        }
        return optimizer;
    }

    /** A fused QKV weight [3·32, 32] with grouped-query heads, on a plain Muon: one step after a forward pass. */
    static Muon qkClipFused(Map<String, Tensor> named, List<Tensor> params, Tensor maxLogits) {
        QkClip clip = QkClip.builder(named)
                .tau(50)
                .alpha(0.5)                                   // W_q gets γ^α, W_k γ^(1−α)
                // 8 query heads of 4 in rows 0..31, 2 key heads of 4 in rows 32..39 (values after them)
                .fusedLayer("attn", "attn.qkv.weight", QkClip.Heads.grouped(8, 2, 4), 0, 32)
                .build();
        Muon muon = Muon.builder().addGroup(params, MuonConfig.defaults()).qkClip(clip).build();
        clip.report("attn", maxLogits);                       // [8]: one per query head
        muon.step();
        return muon;
    }
}
