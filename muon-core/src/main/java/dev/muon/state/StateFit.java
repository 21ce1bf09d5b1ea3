package dev.muon.state;

import dev.muon.MuonConfig;
import dev.muon.internal.TorchNatives;

import java.util.List;
import java.util.function.UnaryOperator;

/**
 * Whether a state can be restored into an optimizer, as the list of every difference: the one fit check of
 * muon-core, used by every restore ({@code Muon.restore}, {@code MuonAdamW.restore}, and so every {@code load} and
 * {@code importTorchStateDict}).
 *
 * <p>A state fits an optimizer whose own state it could be: the same entries (name, optimizer, group, shape,
 * dtype, tie, row split, in order), the same number of Muon groups, an AdamW part on both sides or neither, the
 * same Muon build settings (every {@link MuonConfig} field except the hyperparameters a restore takes: {@code lr},
 * {@code weightDecay}, {@code momentum}, {@code nesterov}, {@code adjustLr}, {@code extraScale}), a schedule
 * record with one base lr per group, and tensors that belong where they are: a parameter's value and AdamW's
 * moments of its shape and dtype, each Muon state buffer one its update declares ({@link dev.muon.BufferSpec}: the momentum,
 * NorMuon's second moment) with the declared shape and dtype, every declared buffer or none, all finite (the
 * parameter values too: a NaN weight trains NaN from the first step), AdamW's {@code exp_avg_sq} and a buffer
 * declared non-negative {@code >= 0}, and AdamW's step count in {@code [0, step]}.
 */
public final class StateFit {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private StateFit() {
    }

    /**
     * Every difference of {@code candidate} from what {@code optimizer} can restore ({@link CheckpointFit}'s check
     * of their documents and of the candidate's tensors).
     *
     * @param optimizer the optimizer's own state (its values are not used)
     * @param candidate the state to restore
     * @return the differences, empty when the candidate fits
     */
    public static List<StateMismatchException.Difference> differences(OptimizerState optimizer,
                                                                      OptimizerState candidate) {
        return CheckpointFit.differences(optimizer.document(), candidate.document(), candidate.tensors(),
                TensorBytes.TORCH);
    }

    /**
     * Throws if {@code candidate} does not fit.
     *
     * @param optimizer the optimizer's own state
     * @param candidate the state to restore
     * @param source    what the state came from, for the message ("checkpoint /x/run.ckpt")
     * @param hints     adds the optimizer's advice to a difference (identity for none)
     * @throws StateMismatchException listing every difference
     */
    public static void require(OptimizerState optimizer, OptimizerState candidate, String source,
                               UnaryOperator<StateMismatchException.Difference> hints) {
        List<StateMismatchException.Difference> found = differences(optimizer, candidate);
        if (!found.isEmpty()) {
            throw new StateMismatchException(source, found.stream().map(hints).toList());
        }
    }
}
