package dev.muon.bench;

import dev.muon.AdjustLr;
import dev.muon.MuonConfig;
import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The yardstick is honest: {@link TorchReferenceStep} replays every {@code muon_*} and {@code hybrid_*} golden
 * trajectory of muon-core's test jar (the golden README's Muon step, which is {@code torch.optim.Muon}'s, and
 * PyTorch's AdamW), per step, with the README's tolerances: parameters, momentum buffers, the orthogonalized update
 * recovered from the parameter change, and AdamW's parameters. In float64 (1e-12) this pins every formula (the EMA
 * momentum, Nesterov, the clamped norm, the adjusted lr, the decay with the unadjusted lr); float32 (1e-5) and
 * bfloat16 (0.25 on the update, PyTorch's default dtype) are the yardstick's two entries.
 */
class TorchReferenceStepTest {

    /** One precision: the parameters' dtype, the iteration's, and the README's tolerances. */
    record Precision(String label, ScalarType paramType, NsPrecision ns, double paramAbs, double updateRel,
                     double stateRel) {
        @Override
        public String toString() {
            return label;
        }
    }

    static final Precision FLOAT64 = new Precision("float64", ScalarType.Double, NsPrecision.FLOAT64, 1e-12, 1e-12,
            1e-12);
    static final Precision FLOAT32 = new Precision("float32", ScalarType.Float, NsPrecision.FLOAT32, 1e-5, 1e-5, 1e-5);
    // README: 0.25 relative on the update and 0.2·lr·steps absolute on the parameters (NaN: derived from the lr)
    // for a bfloat16 iteration; the buffers stay float32.
    static final Precision BFLOAT16 = new Precision("bfloat16", ScalarType.Float, NsPrecision.BFLOAT16, Double.NaN,
            0.25, 1e-5);

    static Stream<Arguments> muonCases() {
        return GoldenReader.cases(n -> n.startsWith("muon_")).stream()
                .flatMap(c -> Stream.of(FLOAT64, FLOAT32, BFLOAT16).map(p -> Arguments.of(c, p)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("muonCases")
    void muonTrajectory_matchesGolden(GoldenCase c, Precision precision) {
        try (PointerScope scope = new PointerScope()) {
            MuonConfig config = GoldenConfigs.muon(c, precision.ns());
            List<Tensor> params = new ArrayList<>();
            for (GoldenCase.Param p : c.params()) {
                params.add(Tensors.of(c.tensor("param", p.name(), 0), precision.paramType()).requires_grad_(true));
            }
            TorchReferenceStep reference = new TorchReferenceStep(params, config, List.of(), new AdamWOptions(1e-3));
            int steps = c.integer("num_steps");
            double paramTolerance = Double.isNaN(precision.paramAbs()) ? 0.2 * config.lr() * steps
                    : precision.paramAbs();
            for (int k = 1; k <= steps; k++) {
                List<double[]> before = new ArrayList<>();
                for (int i = 0; i < params.size(); i++) {
                    GoldenCase.Param p = c.params().get(i);
                    before.add(Tensors.values(params.get(i)));
                    params.get(i).mutable_grad().put(Tensors.of(c.tensor("grad", p.name(), k), precision.paramType()));
                }
                reference.step();
                for (int i = 0; i < params.size(); i++) {
                    GoldenCase.Param p = c.params().get(i);
                    String where = c.name() + " " + precision + " step " + k + " " + p.name();
                    double bufferError = Tensors.relativeError(reference.momentumBuffer(i),
                            c.tensor("momentum_buffer", p.name(), k).data());
                    assertTrue(bufferError <= precision.stateRel(), where + ": momentum_buffer rel error "
                            + bufferError + " exceeds " + precision.stateRel());
                    double[] update = recoveredUpdate(before.get(i), Tensors.values(params.get(i)), config,
                            p.shape());
                    double updateError = Tensors.relativeError(update,
                            c.tensor("orthogonalized_update", p.name(), k).data());
                    assertTrue(updateError <= precision.updateRel(), where + ": orthogonalized_update rel error "
                            + updateError + " exceeds " + precision.updateRel());
                    double paramError = Tensors.maxAbsError(params.get(i), c.tensor("param", p.name(), k).data());
                    assertTrue(paramError <= paramTolerance, where + ": param abs error " + paramError + " exceeds "
                            + paramTolerance);
                }
            }
        }
    }

    static Stream<Arguments> hybridCases() {
        return GoldenReader.cases(n -> n.startsWith("hybrid_")).stream()
                .flatMap(c -> Stream.of(FLOAT64, FLOAT32).map(p -> Arguments.of(c, p)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("hybridCases")
    void hybridTrajectory_withLibtorchsAdamW_matchesGolden(GoldenCase c, Precision precision) {
        try (PointerScope scope = new PointerScope()) {
            List<Tensor> muon = new ArrayList<>();
            List<Tensor> adamW = new ArrayList<>();
            List<Tensor> all = new ArrayList<>();
            for (GoldenCase.Param p : c.params()) {
                Tensor t = Tensors.of(c.tensor("param", p.name(), 0), precision.paramType()).requires_grad_(true);
                (p.optimizer().equals("muon") ? muon : adamW).add(t);
                all.add(t);
            }
            AdamWOptions options = new AdamWOptions(c.number("adamw.lr"));
            // The golden AdamW is PyTorch's defaults but for its lr: beta1, beta2, eps and decay as libtorch's.
            assertEquals(0.9, c.number("adamw.beta1"));
            assertEquals(0.999, c.number("adamw.beta2"));
            options.eps().put(c.number("adamw.eps"));
            options.weight_decay().put(c.number("adamw.weight_decay"));
            TorchReferenceStep reference = new TorchReferenceStep(muon, GoldenConfigs.muon(c, precision.ns()), adamW,
                    options);
            for (int k = 1; k <= c.integer("num_steps"); k++) {
                for (int i = 0; i < all.size(); i++) {
                    all.get(i).mutable_grad().put(Tensors.of(c.tensor("grad", c.params().get(i).name(), k),
                            precision.paramType()));
                }
                reference.step();
                for (int i = 0; i < all.size(); i++) {
                    GoldenCase.Param p = c.params().get(i);
                    double error = Tensors.maxAbsError(all.get(i), c.tensor("param", p.name(), k).data());
                    assertTrue(error <= precision.paramAbs(), c.name() + " " + precision + " step " + k + " "
                            + p.name() + " (" + p.optimizer() + "): param abs error " + error + " exceeds "
                            + precision.paramAbs());
                }
            }
        }
    }

    static Stream<Arguments> refusals() {
        List<Arguments> rows = new ArrayList<>();
        rows.add(Arguments.of((UnaryOperator<MuonConfig>) m -> m.withNsCoefficients(
                CoefficientSchedule.polarExpress5()),
                "nsCoefficients must be one triple for every step (torch.optim.Muon's ns_coefficients), got the "
                        + "per-step schedule " + CoefficientSchedule.polarExpress5().name()));
        rows.add(Arguments.of((UnaryOperator<MuonConfig>) m -> m.withAdjustLr(AdjustLr.SPECTRAL),
                "adjustLr must be ORIGINAL, MATCH_RMS_ADAMW or NONE (torch.optim.Muon's adjust_lr_fn), got "
                        + "SPECTRAL"));
        rows.add(Arguments.of((UnaryOperator<MuonConfig>) m -> m.withExtraScale(2.0),
                "extraScale must be 1 (torch.optim.Muon has none), got 2.0"));
        rows.add(Arguments.of((UnaryOperator<MuonConfig>) m -> m.withCautiousWeightDecay(true),
                "cautiousWeightDecay must be false (torch.optim.Muon has none), got true"));
        return rows.stream();
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("refusals")
    void settingsTorchOptimMuonLacks_areRefused(UnaryOperator<MuonConfig> change, String message) {
        try (PointerScope scope = new PointerScope()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new TorchReferenceStep(List.of(), change.apply(MuonConfig.defaults()), List.of(),
                            new AdamWOptions(1e-3)));
            assertEquals(message, e.getMessage());
        }
    }

    /** {@code O = (p_{k−1}·(1 − lr·wd) − p_k) / (lr·ratio)}, in float64 (MuonGoldenTest's recovery). */
    private static double[] recoveredUpdate(double[] before, double[] after, MuonConfig config, long[] shape) {
        double decay = 1 - config.lr() * config.weightDecay();
        double scaledLr = TorchReferenceStep.adjustedLr(config.lr(), config.adjustLr(), shape[0], shape[1]);
        double[] o = new double[before.length];
        for (int j = 0; j < o.length; j++) {
            o[j] = (before[j] * decay - after[j]) / scaledLr;
        }
        return o;
    }
}
