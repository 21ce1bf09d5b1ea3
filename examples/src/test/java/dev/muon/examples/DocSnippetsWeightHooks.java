package dev.muon.examples;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.RadialBrakeConfig;
import dev.muon.UpdateFloorConfig;
import org.bytedeco.pytorch.Tensor;

import java.util.List;

/** The weight-update hooks' snippet of {@code docs/api.md}, compiled here; {@link DocSnippetsTest} checks it is the page's. */
final class DocSnippetsWeightHooks {
    private DocSnippetsWeightHooks() {
    }

    // api.md, "Weight-update hooks".
    static List<Muon> hookedMuons(List<Tensor> hiddenMatrices) {
        MuonConfig braked = MuonConfig.defaults().withLr(0.02).withRadialBrake(RadialBrakeConfig.defaults());
        MuonConfig floored = MuonConfig.defaults().withLr(0.02)
                .withUpdateFloor(UpdateFloorConfig.defaults().withPerRow(true));
        return List.of(Muon.of(hiddenMatrices.subList(0, 1), braked), Muon.of(hiddenMatrices.subList(1, 2), floored));
    }
}
