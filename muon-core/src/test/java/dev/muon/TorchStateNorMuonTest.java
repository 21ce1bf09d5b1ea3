package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.StateFileException;
import dev.muon.state.StateMismatchException;
import dev.muon.state.TorchFiles;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NorMuon and row splits through PyTorch's state file: muon-core writes a parameter's NorMuon second moment
 * ({@code normuon_second_moment}) and a group's NorMuon settings ({@code normuon}) and row splits ({@code row_splits})
 * beside torch.optim.Muon's keys, so that an export imports back whole; a file without them is refused by an
 * optimizer that needs them, naming the setting.
 */
@ExtendWith(NativeScopePerTest.class)
class TorchStateNorMuonTest {
    @TempDir
    Path dir;

    static Map<String, Tensor> model() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        torch.manual_seed(4);
        named.put("attn.qkv.weight", torch.randn(12, 4).requires_grad_(true));
        named.put("fc2.weight", torch.randn(6, 6).requires_grad_(true));
        named.put("fc2.bias", torch.randn(6).requires_grad_(true));
        named.put("head.weight", torch.randn(3, 6).requires_grad_(true));
        return named;
    }

    static MuonAdamW optimizer(Map<String, Tensor> named, boolean norMuon) {
        MuonConfig config = MuonConfig.defaults().withLr(0.02);
        return MuonAdamW.builder(named).muon(norMuon ? config.withNorMuon(0.95, 1e-10) : config)
                .rowSplit("attn.qkv.weight", RowSplit.splitRows(4, 4, 4)).build();
    }

    private static void train(MuonAdamW opt, Map<String, Tensor> named, int steps) {
        for (int i = 0; i < steps; i++) {
            TestModels.setGradients(named, 300 + opt.stepCount());
            opt.step();
        }
    }

    /** Export after 2 steps, import into a new optimizer, 2 more steps: bit for bit the straight run's. */
    @Test
    void norMuonAndRowSplit_roundTrip_andResumeBitForBit() {
        Map<String, Tensor> straightModel = model();
        MuonAdamW straight = optimizer(straightModel, true);
        train(straight, straightModel, 4);

        Map<String, Tensor> firstModel = model();
        MuonAdamW first = optimizer(firstModel, true);
        train(first, firstModel, 2);
        Path file = dir.resolve("normuon.pt");
        first.exportTorchStateDict(file);
        Map<String, Tensor> resumedModel = new LinkedHashMap<>();
        firstModel.forEach((k, v) -> resumedModel.put(k, v.detach().clone().requires_grad_(true)));
        MuonAdamW resumed = optimizer(resumedModel, true);
        resumed.importTorchStateDict(file);
        assertEquals(first.muonStateBytes(), resumed.muonStateBytes(), "the second moments came back");
        train(resumed, resumedModel, 2);
        for (String name : straightModel.keySet()) {
            assertTrue(straightModel.get(name).equal(resumedModel.get(name)), name + " differs");
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void export_writesTheExtraKeys_besideTorchsOwn() {
        Map<String, Tensor> named = model();
        MuonAdamW opt = optimizer(named, true);
        train(opt, named, 1);
        Path file = dir.resolve("normuon.pt");
        opt.exportTorchStateDict(file);
        Map<String, Object> root = (Map<String, Object>) TorchFiles.read(file);
        Map<String, Object> muon = (Map<String, Object>) root.get("muon");
        Map<String, Object> group = (Map<String, Object>) ((List<Object>) muon.get("param_groups")).get(0);
        assertEquals(Map.of("beta2", 0.95, "eps", 1e-10), group.get("normuon"));
        assertEquals(Map.of("attn.qkv.weight", Map.of("split_rows", List.of(4L, 4L, 4L))), group.get("row_splits"));
        Map<Object, Object> state = (Map<Object, Object>) muon.get("state");
        Map<String, Object> first = (Map<String, Object>) state.get(0L);
        assertEquals(List.of(12L), List.of(((Tensor) first.get("normuon_second_moment")).shape()[0]));
    }

    /** The export, to {@code name} in {@code dir}, of the optimizer without NorMuon after one step. */
    private Path plainExport(String name) {
        Map<String, Tensor> named = model();
        MuonAdamW plain = optimizer(named, false);
        train(plain, named, 1);
        Path file = dir.resolve(name);
        plain.exportTorchStateDict(file);
        return file;
    }

    @Test
    void plainFile_intoNorMuonOptimizer_isRefused_namingTheSetting() {
        Path file = plainExport("plain.pt");
        MuonAdamW norMuon = optimizer(model(), true);
        StateMismatchException e = assertThrows(StateMismatchException.class,
                () -> norMuon.importTorchStateDict(file));
        assertTrue(e.getMessage().contains("muon group 0 norMuon: this optimizer withNorMuon(0.95, 1.0E-10), the "
                + "state off"), e.getMessage());
    }

    @Test
    void otherRowSplit_isRefused_namingTheParameter() {
        Path file = plainExport("split.pt");
        MuonAdamW other = MuonAdamW.builder(model()).muon(MuonConfig.defaults().withLr(0.02))
                .rowSplit("attn.qkv.weight", RowSplit.perHead(6)).build();
        StateFileException e = assertThrows(StateFileException.class, () -> other.importTorchStateDict(file));
        assertTrue(e.getMessage().contains("muon.param_groups[0].row_splits['attn.qkv.weight'] is "
                + "{split_rows=[4, 4, 4]}, this optimizer's is perHead(6)"), e.getMessage());
    }
}
