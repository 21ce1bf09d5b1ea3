package dev.muon.examples;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.List;

/**
 * The doc-snippet tests' training run: seeded random weights pulled toward one random target by the summed squared
 * distance, with the loss recorded before the first and before the last step.
 */
final class SquaredLossRun {
    private final List<Tensor> weights;
    private final Tensor target;

    private SquaredLossRun(List<Tensor> weights, Tensor target) {
        this.weights = weights;
        this.target = target;
    }

    /** The loss before the first step and before the last one. */
    record Losses(double first, double last) {
    }

    /**
     * Seeds the generator, then draws {@code count} trainable {@code rows × cols} weights and the target, in that
     * order.
     */
    static SquaredLossRun seeded(long seed, int count, long rows, long cols) {
        torch.manual_seed(seed);
        List<Tensor> weights = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            weights.add(torch.randn(rows, cols).requires_grad_(true));
        }
        return new SquaredLossRun(List.copyOf(weights), torch.randn(rows, cols));
    }

    List<Tensor> weights() {
        return weights;
    }

    /**
     * Runs {@code steps} steps of zero the gradients, take the loss, back-propagate, step.
     *
     * @param step the optimizer step, run after the backward pass; a test may check around it
     */
    Losses train(int steps, Runnable zeroGrad, Runnable step) {
        double first = Double.NaN;
        double last = Double.NaN;
        for (int i = 0; i < steps; i++) {
            zeroGrad.run();
            Tensor loss = weights.get(0).sub(target).pow(new Scalar(2)).sum();
            for (Tensor w : weights.subList(1, weights.size())) {
                loss = loss.add(w.sub(target).pow(new Scalar(2)).sum());
            }
            last = loss.item_double();
            first = i == 0 ? last : first;
            loss.backward();
            step.run();
        }
        return new Losses(first, last);
    }
}
