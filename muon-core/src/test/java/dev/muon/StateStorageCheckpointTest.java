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
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Checkpoints, {@code state()}/{@code restore()} and PyTorch-state files do not know where the state lives: a file
 * written by an optimizer whose state is in files or host memory is byte for byte the file of one whose state is
 * beside its parameters, and each loads into the other, the run going on bit for bit as one that never stopped; for
 * {@link Muon} (NorMuon, bfloat16 momentum, a same-shape batch) and {@link MuonAdamW}.
 */
@ExtendWith(NativeScopePerTest.class)
class StateStorageCheckpointTest {
    @TempDir
    Path dir;

    static Stream<Arguments> storages() {
        return Stream.of(Arguments.of("files", false), Arguments.of("host-memory", true));
    }

    private StateStorage storage(String name) {
        return name.equals("files") ? StateStorage.files(dir) : StateStorage.hostMemory();
    }

    private static final MuonConfig CONFIG = MuonConfig.defaults().withLr(0.02).withNorMuon(0.95, 1e-8)
            .withMomentumPrecision(MomentumPrecision.BFLOAT16);

    private static List<Tensor> parameters() {
        torch.manual_seed(11);
        List<Tensor> params = new ArrayList<>();
        for (int k = 0; k < 3; k++) {
            params.add(torch.randn(6, 6));
        }
        params.add(torch.randn(5, 9));
        return params;
    }

    private static Muon muon(List<Tensor> params, StateStorage storage, boolean cpuAsAccelerator) {
        Muon.Builder builder = Muon.builder().addGroup(params, CONFIG).stateStorage(storage);
        if (cpuAsAccelerator) {
            builder.cpuAsAccelerator(DeviceTransfers.synchronous());
        }
        return builder.build();
    }

    private static void steps(Muon muon, List<Tensor> params, int from, int to) {
        for (int step = from; step <= to; step++) {
            torch.manual_seed(200 + step);
            for (Tensor p : params) {
                p.mutable_grad().put(torch.randn(p.shape()));
            }
            muon.step();
        }
    }

    private static void assertSame(List<Tensor> expected, List<Tensor> actual, String what) {
        for (int i = 0; i < expected.size(); i++) {
            assertTrue(expected.get(i).equal(actual.get(i)), what + ": parameter " + i + " differs");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("storages")
    void muonFiles_areTheSame_andLoadEitherWay(String name, boolean cpuAsAccelerator) throws Exception {
        StateStorage offloaded = storage(name);
        List<Tensor> through = parameters();
        Muon reference = muon(through, StateStorage.withParameter(), false);
        steps(reference, through, 1, 2);
        Path beside = dir.resolve("beside.ckpt");
        Path besideTorch = dir.resolve("beside.pt");
        reference.save(beside);
        reference.exportTorchStateDict(besideTorch);
        steps(reference, through, 3, 4);

        List<Tensor> away = parameters();
        Muon elsewhere = muon(away, offloaded, cpuAsAccelerator);
        steps(elsewhere, away, 1, 2);
        Path kept = dir.resolve("elsewhere.ckpt");
        Path keptTorch = dir.resolve("elsewhere.pt");
        elsewhere.save(kept);
        elsewhere.exportTorchStateDict(keptTorch);
        assertArrayEquals(Files.readAllBytes(beside), Files.readAllBytes(kept), "the checkpoints differ");
        assertArrayEquals(Files.readAllBytes(besideTorch), Files.readAllBytes(keptTorch),
                "the PyTorch state files differ");

        // Written beside the parameters, loaded into state kept elsewhere (a fresh optimizer, other values).
        List<Tensor> loaded = parameters();
        loaded.forEach(p -> p.mul_(new org.bytedeco.pytorch.Scalar(3.0)));
        Muon into = muon(loaded, offloaded, cpuAsAccelerator);
        into.load(beside);
        steps(into, loaded, 3, 4);
        assertSame(through, loaded, name + ": a checkpoint written beside the parameters, loaded elsewhere");

        // Written elsewhere, loaded beside the parameters.
        List<Tensor> back = parameters();
        Muon beside2 = muon(back, StateStorage.withParameter(), false);
        beside2.load(kept);
        steps(beside2, back, 3, 4);
        assertSame(through, back, name + ": a checkpoint written elsewhere, loaded beside the parameters");

        // The PyTorch state file holds no parameters: the parameters of step 2 come with it, as the docs say.
        List<Tensor> imported = parameters();
        Muon viaTorch = muon(imported, offloaded, cpuAsAccelerator);
        steps(viaTorch, imported, 1, 2);
        viaTorch.importTorchStateDict(besideTorch);
        steps(viaTorch, imported, 3, 4);
        assertSame(through, imported, name + ": a PyTorch state file imported elsewhere");

        // state() and restore() across the two.
        List<Tensor> restored = parameters();
        Muon viaState = muon(restored, offloaded, cpuAsAccelerator);
        List<Tensor> fromBeside = parameters();
        Muon source = muon(fromBeside, StateStorage.withParameter(), false);
        steps(source, fromBeside, 1, 2);
        viaState.restore(source.state());
        steps(viaState, restored, 3, 4);
        assertSame(through, restored, name + ": a state restored elsewhere");

        for (Muon m : List.of(reference, elsewhere, into, beside2, viaTorch, viaState, source)) {
            m.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("storages")
    void muonAdamWCheckpoints_areTheSame_andLoadEitherWay(String name, boolean cpuAsAccelerator) throws Exception {
        Path beside = dir.resolve("beside.ckpt");
        Path kept = dir.resolve("kept.ckpt");
        Map<String, Tensor> through = named();
        MuonAdamW reference = adamW(through, StateStorage.withParameter(), false);
        adamWSteps(reference, through, 1, 2);
        reference.save(beside);
        adamWSteps(reference, through, 3, 4);

        Map<String, Tensor> away = named();
        MuonAdamW elsewhere = adamW(away, storage(name), cpuAsAccelerator);
        adamWSteps(elsewhere, away, 1, 2);
        elsewhere.save(kept);
        assertArrayEquals(Files.readAllBytes(beside), Files.readAllBytes(kept), "the checkpoints differ");

        Map<String, Tensor> loaded = named();
        MuonAdamW into = adamW(loaded, storage(name), cpuAsAccelerator);
        into.load(beside);
        adamWSteps(into, loaded, 3, 4);
        assertSame(new ArrayList<>(through.values()), new ArrayList<>(loaded.values()), name + ": MuonAdamW, "
                + "written beside the parameters, loaded elsewhere");

        Map<String, Tensor> back = named();
        MuonAdamW besideAgain = adamW(back, StateStorage.withParameter(), false);
        besideAgain.load(kept);
        adamWSteps(besideAgain, back, 3, 4);
        assertSame(new ArrayList<>(through.values()), new ArrayList<>(back.values()), name + ": MuonAdamW, "
                + "written elsewhere, loaded beside the parameters");
        for (MuonAdamW m : List.of(reference, elsewhere, into, besideAgain)) {
            m.close();
        }
    }

    private static Map<String, Tensor> named() {
        torch.manual_seed(13);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("embed.weight", torch.randn(10, 4).requires_grad_(true));
        named.put("fc1.weight", torch.randn(8, 4).requires_grad_(true));
        named.put("fc1.bias", torch.randn(8).requires_grad_(true));
        named.put("fc2.weight", torch.randn(8, 8).requires_grad_(true));
        named.put("head.weight", torch.randn(3, 8).requires_grad_(true));
        return named;
    }

    private static MuonAdamW adamW(Map<String, Tensor> named, StateStorage storage, boolean cpuAsAccelerator) {
        MuonAdamW.Builder builder = MuonAdamW.builder(named).muon(CONFIG).muonStateStorage(storage);
        if (cpuAsAccelerator) {
            builder.cpuAsAccelerator(DeviceTransfers.synchronous());
        }
        return builder.build();
    }

    private static void adamWSteps(MuonAdamW optimizer, Map<String, Tensor> named, int from, int to) {
        for (int step = from; step <= to; step++) {
            torch.manual_seed(300 + step);
            for (Tensor p : named.values()) {
                p.mutable_grad().put(torch.randn(p.shape()));
            }
            optimizer.step();
        }
    }
}
