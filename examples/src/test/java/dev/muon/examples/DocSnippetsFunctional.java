package dev.muon.examples;

import dev.muon.MuonConfig;
import dev.muon.MuonUpdate;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.List;

/**
 * The Java snippet of {@code docs/api.md} about the functional entry point, compiled here and run by
 * {@link DocSnippetsFunctionalTest}; {@link DocSnippetsTest} checks that the page's block is a piece of this file.
 */
final class DocSnippetsFunctional {
    private DocSnippetsFunctional() {
    }

    // docs/api.md, "Embedding the update: the functional entry point".
    static List<Tensor> trainFunctionally(List<Tensor> weights, Tensor images, Tensor labels, int steps) {
        MuonConfig config = MuonConfig.defaults().withLr(0.02);
        List<Tensor> buffers = new ArrayList<>();                 // the momentum: yours to keep and checkpoint
        for (Tensor w : weights) {
            buffers.add(torch.zeros_like(w));
        }
        for (int step = 0; step < steps; step++) {
            Tensor hidden = torch.relu(torch.matmul(images, weights.get(0).t()));
            torch.cross_entropy_loss(torch.matmul(hidden, weights.get(1).t()), labels).backward();
            List<Tensor> grads = new ArrayList<>();
            for (Tensor w : weights) {
                grads.add(w.grad());
            }
            double lr = 0.02 * (1 - (double) step / steps);       // the schedule is yours too
            MuonUpdate.apply(weights, grads, buffers, config.withLr(lr));
            for (Tensor w : weights) {
                w.mutable_grad().put(new Tensor());               // zero_grad: the gradients are yours
            }
        }
        return buffers;
    }
}
