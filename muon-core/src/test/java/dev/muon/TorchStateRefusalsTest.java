package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** NorMuon's second moments and row splits have no place in torch.optim.Muon's state: export and import refuse. */
@ExtendWith(NativeScopePerTest.class)
class TorchStateRefusalsTest {
    @TempDir
    Path dir;

    private static final String NOR = "NorMuonConfig[beta2=0.95, eps=1.0E-10]";

    static Map<String, Tensor> model() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("fc1.weight", torch.randn(6, 4).requires_grad_(true));
        named.put("fc2.weight", torch.randn(6, 6).requires_grad_(true));
        named.put("fc2.bias", torch.randn(6).requires_grad_(true));
        return named;
    }

    static Stream<Arguments> refusals() {
        MuonConfig norMuon = MuonConfig.defaults().withNorMuon(0.95, 1e-10);
        BiConsumer<Object, Path> export = (o, p) -> {
            if (o instanceof Muon m) {
                m.exportTorchStateDict(p);
            } else {
                ((MuonAdamW) o).exportTorchStateDict(p);
            }
        };
        BiConsumer<Object, Path> importer = (o, p) -> {
            if (o instanceof Muon m) {
                m.importTorchStateDict(p);
            } else {
                ((MuonAdamW) o).importTorchStateDict(p);
            }
        };
        return Stream.of(
                Arguments.of("muon_norMuon_export", (java.util.function.Supplier<Object>) () ->
                        Muon.of(List.of(torch.randn(6, 4).requires_grad_(true)), norMuon), export,
                        "exportTorchStateDict cannot carry NorMuon: group 0 has " + NOR + ", and torch.optim.Muon's "
                                + "state has no per-row second moment (save and load keep it)"),
                Arguments.of("muon_norMuon_import", (java.util.function.Supplier<Object>) () ->
                        Muon.of(List.of(torch.randn(6, 4).requires_grad_(true)), norMuon), importer,
                        "importTorchStateDict cannot carry NorMuon: group 0 has " + NOR + ", and torch.optim.Muon's "
                                + "state has no per-row second moment (save and load keep it)"),
                Arguments.of("muon_rowSplit_export", (java.util.function.Supplier<Object>) () -> {
                    Tensor w = torch.randn(6, 4).requires_grad_(true);
                    return Muon.builder().addGroup(List.of(w), MuonConfig.defaults())
                            .rowSplit(w, RowSplit.perHead(2)).build();
                }, export, "exportTorchStateDict cannot carry row splits: 'parameter 0 of group 0' has perHead(2), "
                        + "and torch.optim.Muon orthogonalizes whole matrices (save and load keep it)"),
                Arguments.of("muonAdamW_norMuon_export", (java.util.function.Supplier<Object>) () ->
                        MuonAdamW.builder(model()).muon(norMuon).build(), export,
                        "exportTorchStateDict cannot carry NorMuon: group 0 has " + NOR + ", and torch.optim.Muon's "
                                + "state has no per-row second moment (save and load keep it)"),
                Arguments.of("muonAdamW_rowSplit_import", (java.util.function.Supplier<Object>) () ->
                        MuonAdamW.builder(model()).rowSplit("fc1.weight", RowSplit.splitRows(3, 3)).build(),
                        importer, "importTorchStateDict cannot carry row splits: 'fc1.weight' has "
                                + "splitRows(3, 3), and torch.optim.Muon orthogonalizes whole matrices (save and "
                                + "load keep it)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void notExpressibleInTorchState_isRefused_andNoFileIsWritten(String name,
            java.util.function.Supplier<Object> optimizer, BiConsumer<Object, Path> call, String message) {
        Path file = dir.resolve(name + ".pt");
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> call.accept(optimizer.get(), file));
        assertEquals(message, e.getMessage());
        assertFalse(Files.exists(file));
    }
}
