package dev.muon.examples;

import org.bytedeco.pytorch.Tensor;

/** A Fashion-MNIST model: images {@code [n, 1, 28, 28]} in, logits {@code [n, 10]} out. */
interface ImageClassifier {
    /**
     * The logits of a batch.
     *
     * @param images {@code [n, 1, 28, 28]}
     * @return {@code [n, 10]}
     */
    Tensor forward(Tensor images);
}
