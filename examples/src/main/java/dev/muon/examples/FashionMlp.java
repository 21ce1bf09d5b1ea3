package dev.muon.examples;

import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;

/**
 * A two-hidden-layer perceptron for 28x28 images: {@code 784 → 256 → 256 → 10}, ReLU.
 *
 * <p>With {@code MuonAdamW}'s default rule, {@code fc1.weight} and {@code fc2.weight} go to Muon; the biases and
 * the output layer, named {@code head} so that the rule recognises it, stay on AdamW.
 */
public final class FashionMlp extends Module implements ImageClassifier {
    private static final int PIXELS = 28 * 28;
    private static final int HIDDEN = 256;
    private static final int CLASSES = 10;

    private final LinearImpl fc1;
    private final LinearImpl fc2;
    private final LinearImpl head;

    /** Creates the layers with libtorch's default initialisation (seed it with {@code torch.manual_seed}). */
    public FashionMlp() {
        fc1 = register_module("fc1", new LinearImpl(PIXELS, HIDDEN));
        fc2 = register_module("fc2", new LinearImpl(HIDDEN, HIDDEN));
        head = register_module("head", new LinearImpl(HIDDEN, CLASSES));
    }

    /**
     * The logits of a batch.
     *
     * @param images {@code [n, 1, 28, 28]}
     * @return {@code [n, 10]}
     */
    @Override
    public Tensor forward(Tensor images) {
        Tensor x = images.flatten(1, -1);
        return head.forward(fc2.forward(fc1.forward(x).relu()).relu());
    }
}
