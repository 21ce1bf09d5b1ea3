package dev.muon.examples;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs api.md's functional snippet ({@link DocSnippetsFunctional#trainFunctionally}); {@link DocSnippetsTest}
 * checks it is the page's.
 */
class DocSnippetsFunctionalTest {

    /** It trains, and ends where a {@code Muon} given the same schedule ends, buffers included. */
    @Test
    void functionalSnippet_trainsLikeMuon() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(9);
            Tensor images = torch.randn(32, 20);
            Tensor labels = torch.randint(10, new long[]{32});
            List<Tensor> weights = List.of(torch.randn(16, 20).mul_(new Scalar(0.2))
                    .requires_grad_(true), torch.randn(10, 16).mul_(new Scalar(0.2))
                    .requires_grad_(true));
            List<Tensor> twins = List.of(weights.get(0).detach().clone().requires_grad_(true),
                    weights.get(1).detach().clone().requires_grad_(true));
            double first = loss(weights, images, labels);
            int steps = 5;
            List<Tensor> buffers = DocSnippetsFunctional.trainFunctionally(weights, images, labels, steps);
            assertTrue(loss(weights, images, labels) < first, "five steps lower the loss");

            try (Muon muon = Muon.of(twins, MuonConfig.defaults().withLr(0.02).withBatchSameShape(false))) {
                for (int step = 0; step < steps; step++) {
                    muon.setLr(0, 0.02 * (1 - (double) step / steps));
                    muon.zeroGrad();
                    Tensor hidden = torch.relu(torch.matmul(images, twins.get(0).t()));
                    torch.cross_entropy_loss(torch.matmul(hidden, twins.get(1).t()), labels).backward();
                    muon.step();
                }
                for (int i = 0; i < 2; i++) {
                    assertTrue(twins.get(i).equal(weights.get(i)), "weight " + i + " is Muon's");
                    assertTrue(muon.momentumBuffer(twins.get(i)).orElseThrow().equal(buffers.get(i)),
                            "buffer " + i + " is Muon's");
                }
            }
        }
    }

    private static double loss(List<Tensor> w, Tensor images, Tensor labels) {
        try (NoGradGuard noGrad = new NoGradGuard()) {
            Tensor hidden = torch.relu(torch.matmul(images, w.get(0).t()));
            return torch.cross_entropy_loss(torch.matmul(hidden, w.get(1).t()), labels).item_double();
        }
    }
}
