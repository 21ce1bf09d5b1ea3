package dev.muon.examples;

import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.pytorch.Conv2dImpl;
import org.bytedeco.pytorch.Conv2dOptions;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A small convolutional network for 28x28 images: two 3x3 convolutions (16 and 32 channels, padding 1), each
 * followed by ReLU and 2x2 max pooling, then {@code 1568 → 128 → 10}.
 *
 * <p>The conv filters are 4-D ({@code [out, in, 3, 3]}); {@code MuonAdamW} sends them to Muon, which
 * orthogonalizes them as the matrix {@code [out, in·9]}, as Keller Jordan's CIFAR-10 speedruns do. Sizes are
 * small so that an epoch of the 60,000 images takes seconds, not minutes, on a laptop CPU.
 */
public final class FashionCnn extends Module implements ImageClassifier {
    private static final int C1 = 16;
    private static final int C2 = 32;
    private static final int HIDDEN = 128;
    private static final int CLASSES = 10;

    private final Conv2dImpl conv1;
    private final Conv2dImpl conv2;
    private final LinearImpl fc1;
    private final LinearImpl head;

    /** Creates the layers with libtorch's default initialisation (seed it with {@code torch.manual_seed}). */
    public FashionCnn() {
        conv1 = register_module("conv1", new Conv2dImpl(conv3x3(1, C1)));
        conv2 = register_module("conv2", new Conv2dImpl(conv3x3(C1, C2)));
        fc1 = register_module("fc1", new LinearImpl(C2 * 7 * 7, HIDDEN));
        head = register_module("head", new LinearImpl(HIDDEN, CLASSES));
    }

    private static Conv2dOptions conv3x3(long in, long out) {
        Conv2dOptions options = new Conv2dOptions(in, out, new LongPointer(3, 3));
        // "same" padding keeps 28 → 14 → 7 after the two poolings.
        options.padding().put(new LongPointer(1, 1));
        return options;
    }

    /**
     * The logits of a batch.
     *
     * @param images {@code [n, 1, 28, 28]}
     * @return {@code [n, 10]}
     */
    @Override
    public Tensor forward(Tensor images) {
        Tensor x = torch.max_pool2d(conv1.forward(images).relu(), 2, 2);
        x = torch.max_pool2d(conv2.forward(x).relu(), 2, 2);
        return head.forward(fc1.forward(x.flatten(1, -1)).relu());
    }
}
