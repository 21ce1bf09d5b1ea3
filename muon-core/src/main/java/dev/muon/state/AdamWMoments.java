package dev.muon.state;

import dev.muon.internal.TorchNatives;

import org.bytedeco.pytorch.Tensor;

import java.util.Objects;

/**
 * AdamW's state of one parameter, as PyTorch's {@code torch.optim.AdamW} and libtorch's keep it.
 *
 * @param expAvg   the first moment {@code m}, in the parameter's shape and dtype
 * @param expAvgSq the second moment {@code v}, in the parameter's shape and dtype
 * @param step     how many updates the parameter has had
 */
public record AdamWMoments(Tensor expAvg, Tensor expAvgSq, long step) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates.
     *
     * @throws IllegalArgumentException if {@code step < 0}
     * @throws NullPointerException     if a moment is null
     */
    public AdamWMoments {
        Objects.requireNonNull(expAvg, "expAvg must not be null");
        Objects.requireNonNull(expAvgSq, "expAvgSq must not be null");
        if (step < 0) {
            throw new IllegalArgumentException("step must be >= 0, got " + step);
        }
    }
}
