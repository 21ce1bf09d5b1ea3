package dev.muon.examples;

import org.bytedeco.pytorch.EmbeddingImpl;
import org.bytedeco.pytorch.LayerNormImpl;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.LongVector;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.List;

/**
 * The model of {@link TinyGpt}: a decoder-only transformer over characters (GPT-2's layout, pre-norm), written
 * with {@code org.bytedeco.pytorch} modules and tensor ops only.
 *
 * <p>Module names follow nanoGPT's conventions on purpose, because {@code MuonAdamW}'s default assignment reads
 * them: {@code tok_emb}, {@code pos_emb} and {@code lm_head} go to AdamW (embeddings and the output head are not
 * hidden matrices), the attention and MLP matrices of every block go to Muon, and biases and LayerNorm gains go to
 * AdamW because they have fewer than two dimensions.
 */
public final class CharTransformer extends Module {
    private final int context;
    private final EmbeddingImpl tokEmb;
    private final EmbeddingImpl posEmb;
    private final List<Block> blocks = new ArrayList<>();
    private final LayerNormImpl lnF;
    private final LinearImpl lmHead;
    private final Tensor positions;

    /**
     * Builds the model with libtorch's default initialisation (seed it with {@code torch.manual_seed} first).
     *
     * @param vocabulary characters in the vocabulary
     * @param context    the longest input
     * @param width      the model width d
     * @param layers     transformer blocks
     * @param heads      attention heads; must divide {@code width}
     */
    public CharTransformer(int vocabulary, int context, int width, int layers, int heads) {
        if (width % heads != 0) {
            throw new IllegalArgumentException("heads must divide width, got width " + width + ", heads " + heads);
        }
        this.context = context;
        tokEmb = register_module("tok_emb", new EmbeddingImpl(vocabulary, width));
        posEmb = register_module("pos_emb", new EmbeddingImpl(context, width));
        // Bool mask of the future: true above the diagonal, shared by every block.
        Tensor future = torch.ones(context, context).triu(1).gt(new Scalar(0.5));
        for (int i = 0; i < layers; i++) {
            // libtorch refuses dots in a submodule name; "block0.q.weight" reads as well as "blocks.0.q.weight".
            blocks.add(register_module("block" + i, new Block(width, heads, future)));
        }
        lnF = register_module("ln_f", new LayerNormImpl(new LongVector(new long[] {width})));
        lmHead = register_module("lm_head", new LinearImpl(width, vocabulary));
        positions = torch.arange(new Scalar(context));
    }

    /**
     * The logits of the next character at every position.
     *
     * @param ids token ids, [batch, t] with t at most the context
     * @return logits, [batch, t, vocabulary]
     */
    Tensor forward(Tensor ids) {
        long t = ids.size(1);
        Tensor x = tokEmb.forward(ids).add(posEmb.forward(positions.narrow(0, 0, t)));
        for (Block block : blocks) {
            x = block.forward(x);
        }
        return lmHead.forward(lnF.forward(x));
    }

    int context() {
        return context;
    }

    /** One pre-norm block: causal self-attention, then a 4x MLP with GELU, each on a residual branch. */
    static final class Block extends Module {
        private final int heads;
        private final Tensor future;
        private final double scale;
        private final LayerNormImpl ln1;
        private final LinearImpl q;
        private final LinearImpl k;
        private final LinearImpl v;
        private final LinearImpl o;
        private final LayerNormImpl ln2;
        private final LinearImpl fc;
        private final LinearImpl proj;

        Block(int width, int heads, Tensor future) {
            this.heads = heads;
            this.future = future;
            this.scale = 1.0 / Math.sqrt((double) width / heads);
            ln1 = register_module("ln1", new LayerNormImpl(new LongVector(new long[] {width})));
            // Separate q, k and v (not one fused [3d, d] matrix): Muon orthogonalizes each of them on its own,
            // as Keller Jordan's and Moonlight's reference set-ups do.
            q = register_module("q", new LinearImpl(width, width));
            k = register_module("k", new LinearImpl(width, width));
            v = register_module("v", new LinearImpl(width, width));
            o = register_module("o", new LinearImpl(width, width));
            ln2 = register_module("ln2", new LayerNormImpl(new LongVector(new long[] {width})));
            fc = register_module("fc", new LinearImpl(width, 4L * width));
            proj = register_module("proj", new LinearImpl(4L * width, width));
        }

        Tensor forward(Tensor x) {
            Tensor attended = attention(ln1.forward(x));
            x = x.add(attended);
            return x.add(proj.forward(torch.gelu(fc.forward(ln2.forward(x)))));
        }

        /** Scaled dot-product attention with a causal mask, written out with matmul, masked_fill and softmax. */
        private Tensor attention(Tensor x) {
            long b = x.size(0);
            long t = x.size(1);
            long d = x.size(2);
            Tensor qh = splitHeads(q.forward(x), b, t, d);
            Tensor kh = splitHeads(k.forward(x), b, t, d);
            Tensor vh = splitHeads(v.forward(x), b, t, d);
            Tensor mask = future.narrow(0, 0, t).narrow(1, 0, t);
            Tensor weights = qh.matmul(kh.transpose(-2, -1)).mul(new Scalar(scale))
                    .masked_fill(mask, new Scalar(Double.NEGATIVE_INFINITY)).softmax(-1);
            Tensor merged = weights.matmul(vh).transpose(1, 2).contiguous().view(b, t, d);
            return o.forward(merged);
        }

        private Tensor splitHeads(Tensor x, long b, long t, long d) {
            return x.view(b, t, heads, d / heads).transpose(1, 2);
        }
    }
}
