package dev.muon;

import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Tensor;

/**
 * A read-only copy of one Muon parameter's optimizer state ({@link MuonAdamW#muonState(String)}), for logs and
 * tests: changing it changes nothing in the optimizer.
 *
 * @param momentum      a copy of the momentum buffer, in the parameter's shape and dtype
 * @param lastScaledLr  the lr the parameter's last update used: {@link MuonConfig#scaledLr(long, long)} of the
 *                      config in force then; NaN if it has not been updated since the optimizer was
 *                      built or loaded
 */
public record MuonState(Tensor momentum, double lastScaledLr) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

}
