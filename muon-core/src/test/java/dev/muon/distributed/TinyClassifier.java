package dev.muon.distributed;

import org.bytedeco.pytorch.EmbeddingImpl;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/**
 * A small real model for the distributed tests: an embedding and a head (AdamW), four hidden matrices of two
 * shapes (Muon) and their biases (AdamW), trained on seeded random tokens with a real forward and backward.
 */
final class TinyClassifier {
    static final int VOCAB = 16;
    static final int BATCH = 12;
    private static final int TOKENS = 4;

    final Module module = new Module("tiny");
    private final EmbeddingImpl embed;
    private final LinearImpl[] hidden;
    private final LinearImpl head;

    /** Built under {@code torch.manual_seed(seed)}: the same seed gives the same initial bits. */
    TinyClassifier(long seed, boolean extraParameter) {
        torch.manual_seed(seed);
        embed = module.register_module("embed", new EmbeddingImpl(VOCAB, 24));
        hidden = new LinearImpl[]{
                module.register_module("fc1", new LinearImpl(24, 48)),
                module.register_module("fc2", new LinearImpl(48, 48)),
                module.register_module("fc3", new LinearImpl(48, 48)),
                module.register_module("fc4", new LinearImpl(48, 24))};
        head = module.register_module("head", new LinearImpl(24, VOCAB));
        if (extraParameter) {
            module.register_parameter("extra", torch.ones(8, 8));
        }
    }

    Map<String, Tensor> named() {
        Map<String, Tensor> map = new LinkedHashMap<>();
        var dict = module.named_parameters();
        for (long i = 0; i < dict.size(); i++) {
            map.put(dict.get(i).key().getString(), dict.get(i).value());
        }
        return map;
    }

    /**
     * The mean cross-entropy of step {@code step}'s batch, restricted to rows {@code r} with
     * {@code r % shards == shard} (all rows for one shard), with its backward done.
     */
    double lossAndBackward(int step, int shard, int shards) {
        return lossAndBackward(step, shard, shards, 1.0);
    }

    /**
     * {@link #lossAndBackward(int, int, int)} with the loss times {@code scale} before its backward: a micro-batch
     * of gradient accumulation passes {@code 1/k}.
     */
    double lossAndBackward(int step, int shard, int shards, double scale) {
        Random random = new Random(1000 + step);
        long[] tokens = new long[BATCH * TOKENS];
        long[] targets = new long[BATCH];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = random.nextInt(VOCAB);
        }
        for (int i = 0; i < BATCH; i++) {
            targets[i] = random.nextInt(VOCAB);
        }
        int rows = BATCH / shards;
        long[] x = new long[rows * TOKENS];
        long[] y = new long[rows];
        for (int r = 0, k = 0; r < BATCH; r++) {
            if (r % shards == shard) {
                System.arraycopy(tokens, r * TOKENS, x, k * TOKENS, TOKENS);
                y[k++] = targets[r];
            }
        }
        Tensor h = embed.forward(Tensor.create(x, rows, TOKENS)).mean(new long[]{1}, false, null);
        for (int i = 0; i < hidden.length; i++) {
            h = hidden[i].forward(h);
            if (i < hidden.length - 1) {
                h = torch.relu(h);
            }
        }
        Tensor loss = torch.cross_entropy(head.forward(h), Tensor.create(y, rows));
        (scale == 1.0 ? loss : loss.mul(new org.bytedeco.pytorch.Scalar(scale))).backward();
        return loss.item_double();
    }
}
