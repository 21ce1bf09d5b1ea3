package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;


/**
 * Files whose NorMuon entries do not fit their configs or parameters, written through {@link Checkpoint#write} as
 * a damaged or foreign writer could: {@link Muon#load} refuses each, naming the entry, and changes nothing.
 */
@ExtendWith(NativeScopePerTest.class)
class NorMuonDamagedCheckpointTest {
    private static final MuonConfig PLAIN = MuonConfig.defaults().withLr(0.02);
    private static final MuonConfig NORMUON = PLAIN.withNorMuon(NorMuonConfig.defaults());
    private static final String P0 = "parameter 0 of group 0";

    /** What the file holds: one config per group, one [6, 4] parameter per group, its momentum and v (or null). */
    record Damage(List<MuonConfig> configs, boolean momentum, Function<Tensor, Tensor> secondMoment, String message) {
    }

    static Stream<Arguments> damages() {
        Function<Tensor, Tensor> rows = p -> torch.rand(6);
        return Stream.of(
                Arguments.of("secondMoment_withoutNorMuon_isRefused", new Damage(List.of(PLAIN), true, rows,
                        "holds '" + P0 + " (NorMuon second moment)' but no NorMuon group or no momentum buffer for "
                                + "it; the file is damaged")),
                Arguments.of("secondMoment_withoutMomentum_isRefused", new Damage(List.of(NORMUON), false, rows,
                        "holds '" + P0 + " (NorMuon second moment)' but no NorMuon group or no momentum buffer for "
                                + "it; the file is damaged")),
                Arguments.of("momentum_withoutSecondMoment_isRefused", new Damage(List.of(NORMUON), true, p -> null,
                        "'" + P0 + "' has a momentum buffer but no NorMuon second moment, though NorMuon is on; "
                                + "the file is damaged")),
                Arguments.of("secondMoment_wrongShape_isRefused", new Damage(List.of(NORMUON), true,
                        p -> torch.rand(4), "'" + P0 + " (NorMuon second moment)' has shape [4] and dtype Float "
                        + "but the parameter's has shape [6] and dtype Float")),
                Arguments.of("secondMoment_wrongDtype_isRefused", new Damage(List.of(NORMUON), true,
                        p -> torch.rand(6).to(torch.ScalarType.Double), "'" + P0 + " (NorMuon second moment)' has "
                        + "shape [6] and dtype Double but the parameter's has shape [6] and dtype Float")),
                // Only Muon.load knows which parameter is in which group.
                Arguments.of("mixedGroups_momentumWithoutSecondMoment_isRefused", new Damage(List.of(NORMUON, PLAIN),
                        true, p -> null, "'" + P0 + "' has a momentum buffer but no NorMuon second moment, and its "
                        + "group 0 uses NorMuon; the file is damaged")));
    }

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @MethodSource("damages")
    void load_damagedNorMuonEntries_isRefused_andChangesNothing(String name, Damage damage) {
        int groups = damage.configs().size();
        List<Tensor> saved = new ArrayList<>();
        List<Tensor> momentum = new ArrayList<>();
        List<Tensor> secondMoments = new ArrayList<>();
        List<String> labels = new ArrayList<>();
        StringBuilder layout = new StringBuilder();
        for (int g = 0; g < groups; g++) {
            Tensor p = torch.randn(6, 4);
            saved.add(p);
            momentum.add(damage.momentum() ? torch.randn(6, 4) : null);
            secondMoments.add(g == 0 ? damage.secondMoment().apply(p) : null);
            String label = "parameter 0 of group " + g;
            labels.add(label);
            // The layout line Muon writes: kind, label, shape, dtype, no tying.
            layout.append(OptimizerKind.MUON).append('\t').append(label).append('\t')
                    .append(Arrays.toString(p.shape())).append('\t').append(p.scalar_type()).append("\t\n");
        }
        Path file = dir.resolve(name + ".ckpt");
        Checkpoint.write(file, new CheckpointState(3, damage.configs(), null, layout.toString(), labels, saved,
                momentum, List.of(), List.of(), null, null, secondMoments));

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
