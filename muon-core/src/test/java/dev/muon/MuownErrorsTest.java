package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Muown's bad settings and refused combinations, one row each, with the exact message (field, rule, value, why):
 * {@link MuownConfig}'s fields, what {@link MuonConfig} refuses with it, and the parameters a build refuses.
 */
@ExtendWith(NativeScopePerTest.class)
class MuownErrorsTest {
    private static final MuonConfig MUOWN = MuonConfig.defaults().withNesterov(false)
            .withMuown(MuownConfig.defaults());

    static Stream<Arguments> errors() {
        MuonConfig d = MuonConfig.defaults().withNesterov(false);
        return Stream.of(
                row("beta1_one_isRejected", () -> new MuownConfig(1.0, 0.95, 1e-8),
                        "muown beta1 must be in [0, 1), got 1.0"),
                row("beta1_negative_isRejected", () -> new MuownConfig(-0.1, 0.95, 1e-8),
                        "muown beta1 must be in [0, 1), got -0.1"),
                row("beta2_nan_isRejected", () -> new MuownConfig(0.9, Double.NaN, 1e-8),
                        "muown beta2 must be in [0, 1), got NaN"),
                row("adamEps_zero_isRejected", () -> new MuownConfig(0.9, 0.95, 0),
                        "muown adamEps must be a finite number > 0, got 0.0"),
                row("adamEps_infinite_isRejected", () -> new MuownConfig(0.9, 0.95, Double.POSITIVE_INFINITY),
                        "muown adamEps must be a finite number > 0, got Infinity"),
                row("nesterov_isRefused", () -> MuonConfig.defaults().withMuown(MuownConfig.defaults()),
                        "nesterov must be false with muown (Muown's reference has no Nesterov blend; set "
                                + "withNesterov(false) first), got true"),
                row("nesterovAfterMuown_isRefused", () -> MUOWN.withNesterov(true),
                        "nesterov must be false with muown (Muown's reference has no Nesterov blend; set "
                                + "withNesterov(false) first), got true"),
                row("hyperball_isRefused", () -> d.withWeightDecay(0).withHyperball(new HyperballConfig(0, 1e-8))
                        .withMuown(MuownConfig.defaults()), "hyperball must be off with muown (both decide how the "
                        + "weights' norms move: the sphere fixes the norm Muown learns per row), got "
                        + "HyperballConfig[radius=0.0, eps=1.0E-8]"),
                row("radialBrake_isRefused", () -> MUOWN.withRadialBrake(RadialBrakeConfig.defaults()),
                        "radialBrake must be off with muown (a weight-update hook changes the weight's norm or step, "
                                + "which Muown keeps as its per-row magnitudes and direction: its next step would "
                                + "undo the hook), got on"),
                row("relativeUpdate_isRefused", () -> MUOWN.withRelativeUpdate(RelativeUpdateConfig.defaults()),
                        "relativeUpdate must be off with muown (a weight-update hook changes the weight's norm or "
                                + "step, which Muown keeps as its per-row magnitudes and direction: its next step "
                                + "would undo the hook), got on"),
                row("updateFloor_isRefused", () -> MUOWN.withUpdateFloor(UpdateFloorConfig.defaults()),
                        "updateFloor must be off with muown (a weight-update hook changes the weight's norm or step, "
                                + "which Muown keeps as its per-row magnitudes and direction: its next step would "
                                + "undo the hook), got on"),
                row("cautiousWeightDecay_isRefused", () -> MUOWN.withCautiousWeightDecay(true),
                        "cautiousWeightDecay must be false with muown (Muown decays the row magnitudes, which have "
                                + "no update to agree in sign with), got true"),
                row("bfloat16Momentum_isRefused", () -> MUOWN.withMomentumPrecision(MomentumPrecision.BFLOAT16),
                        "momentumPrecision must be PARAMETER with muown (Muown keeps its momentum in float32, "
                                + "float64 for a float64 parameter), got BFLOAT16"),
                row("convFilter_isRefusedAtBuild", () -> Muon.builder().addGroup(List.of(
                        torch.randn(4, 2, 3, 3).requires_grad_(true)), MUOWN.withConvWeights(ConvWeights.FLATTEN))
                                .names(List.of("conv.weight")).build(),
                        "muown needs 2-D parameters (it keeps one magnitude per row of a weight matrix); parameter "
                                + "'conv.weight' has shape [4, 2, 3, 3]; send it to AdamW, or turn muown off"),
                row("stack_isRefusedAtBuild", () -> Muon.builder().addGroup(List.of(
                        torch.randn(3, 4, 5).requires_grad_(true)), MUOWN.withStackedWeights(StackedWeights.BATCH))
                                .names(List.of("experts.weight")).build(),
                        "muown needs 2-D parameters (it keeps one magnitude per row of a weight matrix); parameter "
                                + "'experts.weight' has shape [3, 4, 5]; send it to AdamW, or turn muown off"),
                row("zeroRow_isRefusedAtBuild", () -> {
                    Tensor w = torch.randn(4, 6);
                    w.select(0, 2).zero_();
                    return Muon.builder().addGroup(List.of(w.requires_grad_(true)), MUOWN)
                            .names(List.of("proj.weight")).build();
                }, "muown needs every row of a Muon parameter to have norm > 0 (a row is its magnitude times its "
                        + "direction W/‖W‖_row); parameter 'proj.weight' has a row of norm 0.0"));
    }

    private static Arguments row(String name, Supplier<Object> build, String message) {
        return Arguments.of(name, build, message);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("errors")
    void badSetting_isRejectedWithMessage(String name, Supplier<Object> build, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build::get);
        assertEquals(message, e.getMessage());
    }
}
