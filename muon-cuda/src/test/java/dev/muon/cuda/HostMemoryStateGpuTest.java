package dev.muon.cuda;

import dev.muon.MomentumPrecision;
import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.RowSplit;
import dev.muon.StateStorage;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Muon's state in pinned host memory for parameters on {@code cuda:0} ({@link StateStorage#hostMemory()}): the
 * parameters and every buffer end bit for bit as with the state on the device, with read-ahead (copies on a transfer
 * stream of their own, overlapped with the previous parameter's Newton–Schulz) and without; files are refused for a
 * CUDA parameter, naming it; and the step time of a GPT-2-medium-width stack with the state on the device, in host
 * memory with and without read-ahead, printed as a table for {@code docs/benchmarks.md}. Runs with
 * {@code mvn -Pgpu -pl muon-cuda -am verify} or the GPU test bundle ({@code docs/cuda.md}); skips elsewhere, printing
 * why.
 */
@Tag("gpu")
@ExtendWith(RequireCuda.class)
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
class HostMemoryStateGpuTest {
    @TempDir
    Path dir;

    private static TensorOptions onCuda() {
        return new TensorOptions(ScalarType.Float).device(new DeviceOptional(new Device(torch.DeviceType.CUDA,
                (byte) 0)));
    }

    /** Four steps over a same-shape batch, a row split and a matrix of its own; the parameters, then each buffer. */
    private static List<Tensor> run(MuonConfig config, StateStorage storage) {
        torch.manual_seed(3);
        List<Tensor> params = new ArrayList<>();
        for (int k = 0; k < 3; k++) {
            params.add(torch.randn(new long[]{64, 64}, onCuda()));
        }
        Tensor qkv = torch.randn(new long[]{96, 32}, onCuda());
        params.add(qkv);
        params.add(torch.randn(new long[]{48, 80}, onCuda()));
        Muon muon = Muon.builder().addGroup(params, config).rowSplit(qkv, RowSplit.splitRows(32, 32, 32))
                .stateStorage(storage).build();
        for (int s = 0; s < 4; s++) {
            torch.manual_seed(100 + s);
            for (Tensor p : params) {
                p.mutable_grad().put(torch.randn(p.shape(), onCuda()));
            }
            muon.step();
        }
        List<Tensor> out = new ArrayList<>();
        params.forEach(p -> out.add(p.cpu()));
        for (Tensor p : params) {
            out.add(muon.momentumBuffer(p).orElseThrow().cpu());
            muon.secondMoment(p).ifPresent(v -> out.add(v.cpu()));
        }
        muon.close();
        return out;
    }

    @Test
    void hostMemory_endsBitForBitAsOnTheDevice_withAndWithoutReadAhead() {
        List<MuonConfig> configs = List.of(MuonConfig.defaults().withLr(0.02),
                MuonConfig.defaults().withLr(0.02).withNorMuon(0.95, 1e-8)
                        .withMomentumPrecision(MomentumPrecision.BFLOAT16).withCautiousWeightDecay(true),
                MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.BFLOAT16));
        for (MuonConfig config : configs) {
            try (PointerScope scope = new PointerScope()) {
                List<Tensor> device = run(config, StateStorage.withParameter());
                for (StateStorage storage : List.of(StateStorage.hostMemory(),
                        StateStorage.hostMemory().withReadAhead(false))) {
                    List<Tensor> host = run(config, storage);
                    assertEquals(device.size(), host.size());
                    for (int i = 0; i < device.size(); i++) {
                        assertTrue(device.get(i).equal(host.get(i)), config + ", " + storage + ": tensor " + i
                                + " differs");
                    }
                }
            }
        }
    }

    @Test
    void files_forACudaParameter_areRefused_namingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Muon.builder().addGroup(List.of(torch.randn(new long[]{8, 8}, onCuda())),
                        MuonConfig.defaults()).stateStorage(StateStorage.files(dir)).build());
        assertEquals("stateStorage FILES keeps the state of CPU parameters in files; parameter 0 of group 0 (group 0) "
                + "is on cuda:0: use StateStorage.hostMemory() for accelerator parameters", e.getMessage());
    }

    /**
     * The table of the GPU window: a Muon over the hidden matrices of a GPT-2-medium-width stack (d = 1024, 8 blocks
     * of q, k, v, o, 4096×1024 and 1024×4096; float32, bfloat16 Newton–Schulz), median step time over 10 steps after
     * 3 of warm-up, with the state on the device and in host memory with and without read-ahead.
     */
    @Test
    void stepTime_onTheDeviceAndInHostMemory_isPrinted() {
        List<long[]> shapes = new ArrayList<>();
        for (int block = 0; block < 8; block++) {
            for (int k = 0; k < 4; k++) {
                shapes.add(new long[]{1024, 1024});
            }
            shapes.add(new long[]{4096, 1024});
            shapes.add(new long[]{1024, 4096});
        }
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.BFLOAT16);
        StringBuilder table = new StringBuilder("| state | step, ms (median of 10) | Muon state bytes |\n"
                + "| --- | --- | --- |\n");
        for (StateStorage storage : List.of(StateStorage.withParameter(), StateStorage.hostMemory(),
                StateStorage.hostMemory().withReadAhead(false))) {
            try (PointerScope scope = new PointerScope()) {
                torch.manual_seed(9);
                List<Tensor> params = new ArrayList<>();
                shapes.forEach(s -> params.add(torch.randn(s, onCuda())));
                Muon muon = Muon.builder().addGroup(params, config).stateStorage(storage).build();
                double[] ms = new double[10];
                for (int step = -3; step < ms.length; step++) {
                    try (PointerScope stepScope = new PointerScope()) {
                        for (Tensor p : params) {
                            p.mutable_grad().put(torch.randn(p.shape(), onCuda()));
                        }
                        synchronize();
                        long start = System.nanoTime();
                        muon.step();
                        synchronize();
                        if (step >= 0) {
                            ms[step] = (System.nanoTime() - start) / 1e6;
                        }
                    }
                }
                Arrays.sort(ms);
                table.append("| ").append(storage.place()).append(storage.place() == StateStorage.Place.HOST_MEMORY
                        ? (storage.readAhead() ? ", read-ahead" : ", no read-ahead") : "").append(" | ")
                        .append(String.format("%.1f", (ms[4] + ms[5]) / 2)).append(" | ").append(muon.stateBytes())
                        .append(" |\n");
                muon.close();
            }
        }
        System.out.println("HostMemoryStateGpuTest step times, cuda:0:\n" + table);
    }

    private static void synchronize() {
        torch.getDeviceGuardImpl(torch.DeviceType.CUDA).synchronizeDevice((byte) 0);
    }
}
