package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.StateMismatchException;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A weight hook's run survives both files: trained three steps, saved (muon-core's checkpoint, or a PyTorch state
 * file), loaded into a new optimizer over copies of the parameters, both continue three steps and end bit for bit
 * alike (the hooks keep no state: the file carries the setting and the momentum); and a file saved with one hook
 * does not load into an optimizer with another, naming the setting.
 */
@ExtendWith(NativeScopePerTest.class)
class WeightHookCheckpointTest {
    private static final MuonConfig BASE = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1);

    static Stream<Arguments> cells() {
        List<Arguments> cells = new ArrayList<>();
        List<MuonConfig> hooks = List.of(BASE.withRadialBrake(new RadialBrakeConfig(0.5, 0.75, 1e-12)),
                BASE.withRelativeUpdate(RelativeUpdateConfig.defaults()),
                BASE.withUpdateFloor(new UpdateFloorConfig(5.0, true, 1e-12)));
        for (MuonConfig config : hooks) {
            for (String format : List.of("checkpoint", "pytorch")) {
                cells.add(Arguments.of(UpdateRecipe.of(config).weightHook(), format, config));
            }
        }
        return cells.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cells")
    void saveLoadContinue_isBitExact_andAnotherHookIsRefused(UpdateRecipe.WeightHook hook, String format,
                                                               MuonConfig config, @TempDir Path dir) {
        torch.manual_seed(12);
        List<Tensor> params = List.of(torch.randn(6, 8).requires_grad_(true), torch.randn(8, 4).requires_grad_(true));
        Muon muon = Muon.builder().addGroup(params, config).names(List.of("a", "b")).build();
        for (int step = 0; step < 3; step++) {
            grads(params, 20 + step);
            muon.step();
        }
        Path file = SavedMuon.save(muon, dir, format);
        List<Tensor> copies = new ArrayList<>();
        Muon resumed = SavedMuon.resumed(params, copies, config, file, format);
        for (int step = 0; step < 3; step++) {
            grads(params, 40 + step);
            muon.step();
            grads(copies, 40 + step);
            resumed.step();
        }
        for (int i = 0; i < params.size(); i++) {
            assertTrue(params.get(i).equal(copies.get(i)), hook + " " + format + ": parameter " + i + " differs");
        }
        List<Tensor> others = new ArrayList<>();
        params.forEach(p -> others.add(p.detach().clone().requires_grad_(true)));
        MuonConfig other = hook == UpdateRecipe.WeightHook.RADIAL_BRAKE
                ? BASE.withRelativeUpdate(RelativeUpdateConfig.defaults())
                : BASE.withRadialBrake(RadialBrakeConfig.defaults());
        Muon mismatched = Muon.builder().addGroup(others, other).names(List.of("a", "b")).build();
        StateMismatchException e = assertThrows(StateMismatchException.class,
                () -> SavedMuon.load(mismatched, file, format));
        assertTrue(e.getMessage().contains("radialBrake"), e.getMessage());
    }

    private static void grads(List<Tensor> params, int seed) {
        torch.manual_seed(seed);
        for (Tensor p : params) {
            p.mutable_grad().put(torch.randn(p.shape()));
        }
    }
}
