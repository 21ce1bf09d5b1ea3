package dev.muon;

import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.NsPreconditioning;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The recipe a configuration derives: each setting chooses its element, and each element names its setting. */
class UpdateRecipeTest {

    @Test
    void defaults_areMuonsPlainUpdate() {
        UpdateRecipe recipe = UpdateRecipe.of(MuonConfig.defaults());
        assertEquals(new UpdateRecipe(UpdateRecipe.Momentum.EMA, UpdateRecipe.Orthogonalizer.NEWTON_SCHULZ,
                NsPrecision.FLOAT32, NsAlgorithm.AUTO, NsPreconditioning.FROBENIUS, UpdateRecipe.RowScaling.NONE,
                UpdateRecipe.Applier.DECOUPLED_DECAY, UpdateRecipe.WeightHook.NONE), recipe);
        assertEquals(List.of(UpdateRecipe.Momentum.EMA, UpdateRecipe.Orthogonalizer.NEWTON_SCHULZ,
                UpdateRecipe.RowScaling.NONE, UpdateRecipe.Applier.DECOUPLED_DECAY, UpdateRecipe.WeightHook.NONE),
                recipe.elements());
    }

    static Stream<Arguments> settings() {
        MuonConfig d = MuonConfig.defaults();
        return Stream.of(
                Arguments.of(d.withMomentumPrecision(MomentumPrecision.BFLOAT16),
                        UpdateRecipe.Momentum.EMA_BFLOAT16_STORED, "momentumPrecision = BFLOAT16"),
                Arguments.of(d.withOrthogonalization(Orthogonalization.EXACT_SVD),
                        UpdateRecipe.Orthogonalizer.EXACT_SVD, "orthogonalization = EXACT_SVD"),
                Arguments.of(d.withNorMuon(NorMuonConfig.defaults()), UpdateRecipe.RowScaling.NORMUON,
                        "norMuon = on"),
                Arguments.of(d.withCautiousWeightDecay(true), UpdateRecipe.Applier.CAUTIOUS_DECAY,
                        "cautiousWeightDecay = true"),
                Arguments.of(d.withWeightDecay(0).withHyperball(HyperballConfig.defaults()),
                        UpdateRecipe.WeightHook.HYPERBALL, "hyperball = on"),
                Arguments.of(d.withRadialBrake(RadialBrakeConfig.defaults()), UpdateRecipe.WeightHook.RADIAL_BRAKE,
                        "radialBrake = on"),
                Arguments.of(d.withRelativeUpdate(RelativeUpdateConfig.defaults()),
                        UpdateRecipe.WeightHook.RELATIVE_UPDATE, "relativeUpdate = on"),
                Arguments.of(d.withUpdateFloor(UpdateFloorConfig.defaults()), UpdateRecipe.WeightHook.UPDATE_FLOOR,
                        "updateFloor = on (whole matrix)"),
                Arguments.of(d.withUpdateFloor(UpdateFloorConfig.defaults().withPerRow(true)),
                        UpdateRecipe.WeightHook.UPDATE_FLOOR_PER_ROW, "updateFloor = on (per row)"));
    }

    @ParameterizedTest(name = "{2}")
    @MethodSource("settings")
    void aSetting_choosesItsElement_whichNamesIt(MuonConfig config, UpdateRecipe.Element element, String setting) {
        UpdateRecipe recipe = UpdateRecipe.of(config);
        assertEquals(1, recipe.elements().stream().filter(element::equals).count(), recipe.toString());
        assertEquals(setting, element.setting());
        assertEquals(setting + " is not supported by some-binding: no such operation",
                UpdateRecipe.refused(element, "some-binding", "no such operation").getMessage());
    }

    @Test
    void newtonSchulzSettings_areCarried() {
        UpdateRecipe recipe = UpdateRecipe.of(MuonConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16)
                .withNsAlgorithm(NsAlgorithm.GRAM));
        assertEquals(NsPrecision.BFLOAT16, recipe.nsPrecision());
        assertEquals(NsAlgorithm.GRAM, recipe.nsAlgorithm());
        assertEquals(NsPreconditioning.FROBENIUS, recipe.nsPreconditioning());
        assertEquals(NsPreconditioning.AOL, UpdateRecipe.of(MuonConfig.defaults().withAol()).nsPreconditioning());
    }
}
