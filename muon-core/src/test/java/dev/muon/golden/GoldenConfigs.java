package dev.muon.golden;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.MuonConfig;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;

import java.util.Locale;

/**
 * A golden case's hyperparameters as this library's configs, for every module's golden tests (muon-core's and,
 * through the test jar, muon-djl's). Bindings-free: only the configs, no tensor type.
 */
public final class GoldenConfigs {
    private GoldenConfigs() {
    }

    /** An {@code ns_*} case's iteration ({@code a}, {@code b}, {@code c}, {@code steps}, {@code eps}). */
    public static NewtonSchulzConfig newtonSchulz(GoldenCase c, NsPrecision precision) {
        return new NewtonSchulzConfig(CoefficientSchedule.constant(
                new Coefficients(c.number("a"), c.number("b"), c.number("c"))), c.integer("steps"),
                c.number("eps"), precision);
    }

    /** A case's {@code muon.*} hyperparameters, Newton–Schulz in {@code ns}. */
    public static MuonConfig muon(GoldenCase c, NsPrecision ns) {
        return MuonConfig.defaults()
                .withLr(c.number("muon.lr"))
                .withWeightDecay(c.number("muon.weight_decay"))
                .withMomentum(c.number("muon.momentum"))
                .withNesterov(c.bool("muon.nesterov"))
                .withAdjustLr(AdjustLr.valueOf(c.text("muon.adjust_lr").toUpperCase(Locale.ROOT)))
                .withNsCoefficients(CoefficientSchedule.constant(new Coefficients(
                        c.number("muon.ns_a"), c.number("muon.ns_b"), c.number("muon.ns_c"))))
                .withNsSteps(c.integer("muon.ns_steps"))
                .withEps(c.number("muon.ns_eps"))
                .withNsPrecision(ns);
    }

    /** A case's {@code adamw.*} hyperparameters. */
    public static AdamWConfig adamW(GoldenCase c) {
        return new AdamWConfig(c.number("adamw.lr"), c.number("adamw.beta1"), c.number("adamw.beta2"),
                c.number("adamw.eps"), c.number("adamw.weight_decay"));
    }
}
