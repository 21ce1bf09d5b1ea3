package dev.muon;

import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Tensor;

/**
 * A read-only copy of one AdamW parameter's optimizer state ({@link MuonAdamW#adamWState(String)}), as libtorch's
 * {@code AdamW} keeps it ({@code exp_avg}, {@code exp_avg_sq}, {@code step}), for logs and tests: changing it
 * changes nothing in the optimizer.
 *
 * @param expAvg   a copy of the first moment m
 * @param expAvgSq a copy of the second moment v
 * @param step     how many updates the parameter has had (AdamW counts per parameter)
 * @param lastLr   the lr the parameter's last update used, before bias correction; NaN if it
 *                 has not been updated since the optimizer was built or loaded
 */
public record AdamWState(Tensor expAvg, Tensor expAvgSq, long step, double lastLr) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

}
