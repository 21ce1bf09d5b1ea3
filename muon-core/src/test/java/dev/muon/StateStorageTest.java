package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link StateStorage} in one process: a Muon whose state lives in files or in host memory (a CPU standing in for the
 * accelerator) ends bit for bit where one whose state lives with its parameters ends, and leaves no file behind.
 */
@ExtendWith(NativeScopePerTest.class)
class StateStorageTest {
    @TempDir
    Path dir;

    /** Four steps of NorMuon over a same-shape batch and a matrix of its own; the parameters, then each buffer. */
    private static List<Tensor> run(StateStorage storage, boolean cpuAsAccelerator, ScalarType dtype) {
        torch.manual_seed(3);
        List<Tensor> params = new ArrayList<>();
        for (int k = 0; k < 3; k++) {
            params.add(torch.randn(8, 8).to(dtype));
        }
        params.add(torch.randn(6, 10).to(dtype));
        Muon.Builder builder = Muon.builder()
                .addGroup(params, MuonConfig.defaults().withLr(0.02).withNorMuon(0.95, 1e-8))
                .stateStorage(storage);
        if (cpuAsAccelerator) {
            builder.cpuAsAccelerator(DeviceTransfers.synchronous());
        }
        Muon muon = builder.build();
        for (int s = 0; s < 4; s++) {
            torch.manual_seed(100 + s);
            for (Tensor p : params) {
                p.mutable_grad().put(torch.randn(p.shape()).to(dtype));
            }
            muon.step();
        }
        List<Tensor> out = new ArrayList<>(params);
        for (Tensor p : params) {
            out.add(muon.momentumBuffer(p).orElseThrow().clone());
            out.add(muon.secondMoment(p).orElseThrow().clone());
        }
        muon.close();
        return out;
    }

    /**
     * In the parameter dtypes users train in: the momentum in the parameter's, NorMuon's second moment in float32 for
     * a bfloat16 parameter, wherever the buffers live.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = ScalarType.class, names = {"Float", "BFloat16"})
    void filesAndHostMemory_endBitForBitAsWithTheParameter_andLeaveNoFile(ScalarType dtype) throws Exception {
        List<Tensor> resident = run(StateStorage.withParameter(), false, dtype);
        assertEquals(dtype.value, resident.get(0).scalar_type().value, "the parameters' dtype");
        List<StateStorage> storages = List.of(StateStorage.files(dir), StateStorage.files(dir).withReadAhead(false),
                StateStorage.hostMemory(), StateStorage.hostMemory().withReadAhead(false));
        for (StateStorage storage : storages) {
            List<Tensor> other = run(storage, storage.place() == StateStorage.Place.HOST_MEMORY, dtype);
            for (int i = 0; i < resident.size(); i++) {
                assertEquals(resident.get(i).scalar_type().value, other.get(i).scalar_type().value,
                        storage + ": tensor " + i + " keeps its dtype");
                assertTrue(resident.get(i).equal(other.get(i)), storage + ": tensor " + i + " differs");
            }
        }
        try (var left = Files.list(dir)) {
            assertEquals(List.of(), left.toList(), "close() removes the state files");
        }
    }
}
