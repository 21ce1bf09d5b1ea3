package dev.muon;

import dev.muon.internal.TorchNatives;

import java.util.Objects;

/**
 * The part of a {@link MuonConfig} that may change while an optimizer runs: what a schedule sets and a restore
 * takes from a saved state. Everything else in a config (the Newton–Schulz settings, the layouts, the variants of
 * its {@link UpdateRecipe}) decided how the optimizer was built and stays as it was built: an optimizer's group
 * keeps its built config and replaces only these ({@link MuonConfig#withHyperparameters}).
 *
 * @param lr          the learning rate
 * @param weightDecay the decoupled weight decay
 * @param momentum    the EMA coefficient
 * @param nesterov    whether the update is the Nesterov blend
 * @param adjustLr    the shape-dependent lr scaling
 * @param extraScale  an extra factor on the adjusted lr
 */
public record MuonHyperparameters(double lr, double weightDecay, double momentum, boolean nesterov,
                                  AdjustLr adjustLr, double extraScale) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Checks that no field is null; the values are validated with the config they go into.
     *
     * @throws NullPointerException if {@code adjustLr} is null
     */
    public MuonHyperparameters {
        Objects.requireNonNull(adjustLr, "adjustLr must not be null");
    }
}
