package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.CheckpointFile;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;
import dev.muon.state.ParameterSpec;
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
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * Files whose NorMuon entries do not fit their configs or parameters, as a damaged or foreign writer could write
 * them (a well-formed file of a state that no optimizer would have): {@link Muon#load} refuses each, naming the
 * entry, and changes nothing.
 */
@ExtendWith(NativeScopePerTest.class)
class NorMuonDamagedCheckpointTest {
    private static final MuonConfig PLAIN = MuonConfig.defaults().withLr(0.02);
    private static final MuonConfig NORMUON = PLAIN.withNorMuon(NorMuonConfig.defaults());
    private static final String P0 = "'parameter 0 of group 0'";

    /** What the file holds: one config per group, one [6, 4] parameter per group, its momentum and v (or null). */
    record Damage(List<MuonConfig> configs, boolean momentum, Function<Tensor, Tensor> secondMoment, String message) {
    }

    static Stream<Arguments> damages() {
        Function<Tensor, Tensor> rows = p -> torch.rand(6);
        return Stream.of(
                // The file's own settings declare no second moment: the file is refused as malformed.
                Arguments.of("secondMoment_withoutNorMuon_isRefused", new Damage(List.of(PLAIN), true, rows,
                        "tensor 'second_moment/parameter 0 of group 0' is not '<kind>/<name>' of a parameter of the "
                                + "state with a kind of [exp_avg, exp_avg_sq, momentum, value]")),
                Arguments.of("secondMoment_withoutMomentum_isRefused", new Damage(List.of(NORMUON), false, rows,
                        P0 + " Muon state: this optimizer every buffer its update keeps (momentum buffer, NorMuon "
                                + "second moment) or none, the state NorMuon second moment only")),
                Arguments.of("momentum_withoutSecondMoment_isRefused", new Damage(List.of(NORMUON), true, p -> null,
                        P0 + " Muon state: this optimizer every buffer its update keeps (momentum buffer, NorMuon "
                                + "second moment) or none, the state momentum buffer only")),
                Arguments.of("secondMoment_wrongShape_isRefused", new Damage(List.of(NORMUON), true,
                        p -> torch.rand(4), P0 + " NorMuon second moment shape: this optimizer [6], the state [4]")),
                Arguments.of("secondMoment_wrongDtype_isRefused", new Damage(List.of(NORMUON), true,
                        p -> torch.rand(6).to(torch.ScalarType.Double), P0 + " NorMuon second moment dtype: this "
                        + "optimizer Float, the state Double")),
                Arguments.of("secondMoment_negative_isRefused", new Damage(List.of(NORMUON), true,
                        p -> torch.rand(6).neg(), P0 + " NorMuon second moment values: this optimizer >= 0, the "
                        + "state a negative value")),
                Arguments.of("secondMoment_nan_isRefused", new Damage(List.of(NORMUON), true,
                        p -> torch.full(new long[]{6}, new org.bytedeco.pytorch.Scalar(Double.NaN)),
                        P0 + " NorMuon second moment values: this optimizer finite, the state NaN or Inf")),
                Arguments.of("mixedGroups_momentumWithoutSecondMoment_isRefused", new Damage(List.of(NORMUON, PLAIN),
                        true, p -> null, P0 + " Muon state: this optimizer every buffer its update keeps (momentum "
                        + "buffer, NorMuon second moment) or none, the state momentum buffer only")));
    }

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @MethodSource("damages")
    void load_damagedNorMuonEntries_isRefused_andChangesNothing(String name, Damage damage) {
        int groups = damage.configs().size();
        List<ParameterEntry> entries = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            Tensor p = torch.randn(6, 4);
            entries.add(ParameterEntry.of(ParameterSpec.muon("parameter 0 of group " + g, g, p.shape(),
                            p.scalar_type(), null)).withValue(p)
                    .withBuffer("momentum", damage.momentum() ? torch.randn(6, 4) : null)
                    .withBuffer("second_moment", g == 0 ? damage.secondMoment().apply(p) : null));
        }
        Path file = dir.resolve(name + ".ckpt");
        CheckpointFile.write(file, new OptimizerState(3, damage.configs(), null, entries, null));

        List<Tensor> params = new ArrayList<>();
        Muon.Builder builder = Muon.builder();
        for (int g = 0; g < groups; g++) {
            Tensor p = torch.randn(6, 4);
            params.add(p);
            builder.addGroup(List.of(p), damage.configs().get(g));
        }
        Muon target = builder.build();
        MuonCheckpointTest.train(target, params, 1);
        MuonCheckpointTest.assertLoadRefusedAndNothingChanged(target, params, file, damage.message());
    }
}
