package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import dev.muon.distributed.ShardingConfig;
import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import dev.muon.state.TorchFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.function.Executable;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Muon#exportTorchStateDict} and {@link Muon#importTorchStateDict} (several groups, no AdamW part), and the
 * refusal of both on distributed optimizers.
 */
@ExtendWith(NativeScopePerTest.class)
class TorchStateMuonTest {
    @TempDir
    Path dir;

    private final List<Tensor> params = List.of(
            torch.randn(8, 4).requires_grad_(true),
            torch.randn(4, 8).requires_grad_(true),
            torch.randn(6, 6).requires_grad_(true));

    private Muon twoGroups() {
        return Muon.builder()
                .addGroup(params.subList(0, 2), MuonConfig.defaults().withLr(0.02))
                .addGroup(params.subList(2, 3), MuonConfig.defaults().withLr(0.01).withNesterov(false)
                        .withAdjustLr(AdjustLr.MATCH_RMS_ADAMW))
                .build();
    }

    private void train(Muon muon, int steps) {
        for (int s = 0; s < steps; s++) {
            TestModels.setGradients(params, 100 + muon.stepCount());
            muon.step();
        }
    }

    private Map<String, Object> stateOf(Muon muon) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (int i = 0; i < params.size(); i++) {
            int index = i;
            muon.momentumBuffer(params.get(i)).ifPresent(b -> out.put("momentum" + index, b.detach().clone()));
        }
        out.put("config0", muon.config(0));
        out.put("config1", muon.config(1));
        out.put("step", muon.stepCount());
        return out;
    }

    @Test
    void muon_roundTrip_twoGroups_restoresEveryBit() {
        Muon muon = twoGroups();
        train(muon, 3);
        Map<String, Object> exported = stateOf(muon);
        Path file = dir.resolve("muon.pt");
        muon.exportTorchStateDict(file);
        train(muon, 2);
        muon.setLr(0, 0.5);
        muon.setLr(1, 0.25);
        muon.importTorchStateDict(file);
        TorchStateDictTest.assertSame(exported, stateOf(muon));
    }

    @Test
    void muon_export_writesOneStateDictPerGroupAndNoAdamW() throws IOException {
        Muon muon = twoGroups();
        train(muon, 1);
        Path file = dir.resolve("muon.pt");
        muon.exportTorchStateDict(file);
        Map<?, ?> root = (Map<?, ?>) TorchFiles.read(file);
        assertEquals(List.of("format", "param_names", "step", "muon"), new ArrayList<>(root.keySet()));
        assertEquals(List.of("parameter 0 of group 0", "parameter 1 of group 0", "parameter 0 of group 1"),
                root.get("param_names"));
        List<?> groups = (List<?>) ((Map<?, ?>) root.get("muon")).get("param_groups");
        assertEquals(List.of(0L, 1L), ((Map<?, ?>) groups.get(0)).get("params"));
        assertEquals(List.of(2L), ((Map<?, ?>) groups.get(1)).get("params"));
        assertEquals(false, ((Map<?, ?>) groups.get(1)).get("nesterov"));
        assertEquals("match_rms_adamw", ((Map<?, ?>) groups.get(1)).get("adjust_lr_fn"));
    }

    @Test
    @SuppressWarnings("unchecked")
    void muon_import_otherNsSteps_isRefused_andChangesNothing() throws IOException {
        Muon muon = twoGroups();
        train(muon, 2);
        Path file = dir.resolve("muon.pt");
        muon.exportTorchStateDict(file);
        Map<String, Object> root = (Map<String, Object>) TorchFiles.read(file);
        Map<String, Object> muonPart = new LinkedHashMap<>((Map<String, Object>) root.get("muon"));
        List<Object> groups = new ArrayList<>((List<Object>) muonPart.get("param_groups"));
        Map<String, Object> second = new LinkedHashMap<>((Map<String, Object>) groups.get(1));
        second.put("ns_steps", 3L);
        groups.set(1, second);
        muonPart.put("param_groups", groups);
        root = new LinkedHashMap<>(root);
        root.put("muon", muonPart);
        TorchFiles.write(file, root);
        train(muon, 1);
        Map<String, Object> before = stateOf(muon);

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> muon.importTorchStateDict(file));
        assertTrue(e.getMessage().contains("muon group 1 nsSteps: this optimizer 5, the state 3 (a build setting: "
                + "build the optimizer with nsSteps 3)"), e.getMessage());
        TorchStateDictTest.assertSame(before, stateOf(muon));
    }

    @Test
    void muon_import_fileWithAdamWPart_isRefused() throws IOException {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW hybrid = TorchStateDictTest.optimizer(named, false);
        Path file = dir.resolve("hybrid.pt");
        hybrid.exportTorchStateDict(file);
        Muon muon = twoGroups();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> muon.importTorchStateDict(file));
        assertTrue(e.getMessage().contains("param_names holds 17 names, this optimizer trains 3 parameters"),
                e.getMessage());
    }

    @Test
    void distributed_exportAndImport_areRefused() throws IOException {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        try (DistributedGroup group = DistributedGroup.join(GroupConfig.of("127.0.0.1", port, 0, 1)
                .withTimeout(Duration.ofSeconds(20)))) {
            Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
            MuonAdamW hybrid = MuonAdamW.builder(named).distributed(group, ShardingConfig.defaults()).build();
            Muon muon = Muon.builder().addGroup(params, MuonConfig.defaults())
                    .distributed(group, ShardingConfig.defaults()).build();
            Path file = dir.resolve("state.pt");
            List<Executable> calls = List.of(() -> hybrid.exportTorchStateDict(file),
                    () -> hybrid.importTorchStateDict(file), () -> muon.exportTorchStateDict(file),
                    () -> muon.importTorchStateDict(file));
            for (Executable call : calls) {
                UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, call);
                assertTrue(e.getMessage().contains("works on a single-process optimizer only"), e.getMessage());
            }
            assertFalse(Files.exists(file));
        }
    }
}
