package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The logic of {@link StateStorage.Place#HOST_MEMORY} on a CPU standing in for the accelerator, as a log of what the
 * home asks of its {@link DeviceTransfers}: the next parameter's copy in is issued right after this parameter's
 * buffers are in, before its update (so that on a device it runs on the transfer stream during this parameter's
 * Newton–Schulz); the update waits for its own copy only; the copy out follows the update; every declared buffer
 * travels (momentum and NorMuon's second moment together); a buffer made at its first use, in working memory a copy
 * out may still read, waits for the copies first. Without read-ahead each parameter's copy in comes just before its
 * update. And the working memory of either home stays at two parameters' buffers, whatever the number of
 * parameters and shapes.
 */
@ExtendWith(NativeScopePerTest.class)
class StateTransfersOrderTest {
    @TempDir
    Path dir;

    /** Synchronous copies, each call passed on to them and logged by the shapes of its tensors. */
    private static final class Recording implements DeviceTransfers {
        final List<String> log = new ArrayList<>();
        private final DeviceTransfers copies = DeviceTransfers.synchronous();

        /** The synchronous copies' marker, and what the log names it by. */
        private record Copied(Marker copies, String shapes) implements Marker {
        }

        private static String shapes(Tensor[] tensors) {
            return Arrays.stream(tensors).map(t -> Arrays.toString(t.shape())).collect(Collectors.joining(" "));
        }

        @Override
        public Marker copyIn(Tensor[] device, Tensor[] host) {
            Marker marker = copies.copyIn(device, host);
            log.add("in " + shapes(device));
            return new Copied(marker, shapes(device));
        }

        @Override
        public void computeWaitsFor(Marker copied) {
            copies.computeWaitsFor(((Copied) copied).copies);
            log.add("wait " + ((Copied) copied).shapes);
        }

        @Override
        public void computeWaitsForTransfers() {
            copies.computeWaitsForTransfers();
            log.add("wait for transfers");
        }

        @Override
        public void copyOut(Tensor[] host, Tensor[] device) {
            copies.copyOut(host, device);
            log.add("out " + shapes(device));
        }

        @Override
        public void hostWaits() {
            copies.hostWaits();
        }

        @Override
        public void retire(Tensor t) {
            copies.retire(t);
        }

        @Override
        public void settle() {
            copies.settle();
            log.add("settle");
        }

        @Override
        public void close() {
            copies.close();
        }
    }

    private static List<Tensor> parameters() {
        torch.manual_seed(17);
        return List.of(torch.randn(4, 4), torch.randn(5, 5), torch.randn(6, 6));
    }

    private static void gradients(List<Tensor> params, int step) {
        torch.manual_seed(70 + step);
        for (Tensor p : params) {
            p.mutable_grad().put(torch.randn(p.shape()));
        }
    }

    private static List<String> secondStep(boolean readAhead) {
        List<Tensor> params = parameters();
        Recording transfers = new Recording();
        Muon muon = Muon.builder().addGroup(params, MuonConfig.defaults().withNorMuon(0.95, 1e-8))
                .stateStorage(StateStorage.hostMemory().withReadAhead(readAhead)).cpuAsAccelerator(transfers)
                .build();
        gradients(params, 1);
        muon.step();
        // The first step: nothing stored yet; each buffer is made (zeros) in working memory that a copy out may
        // still be reading, so the update first waits for the copies, and every buffer is copied out after it.
        assertEquals(List.of("wait for transfers", "wait for transfers", "out [4, 4] [4]",
                "wait for transfers", "wait for transfers", "out [5, 5] [5]",
                "wait for transfers", "wait for transfers", "out [6, 6] [6]"), transfers.log);
        transfers.log.clear();
        gradients(params, 2);
        muon.step();
        List<String> log = List.copyOf(transfers.log);
        muon.close();
        return log;
    }

    @Test
    void withReadAhead_theNextCopyIn_isIssuedBeforeThisUpdate() {
        assertEquals(List.of(
                "in [4, 4] [4]", "wait [4, 4] [4]",
                "in [5, 5] [5]",
                "out [4, 4] [4]",
                "wait [5, 5] [5]", "in [6, 6] [6]",
                "out [5, 5] [5]",
                "wait [6, 6] [6]",
                "out [6, 6] [6]"), secondStep(true));
    }

    @Test
    void withoutReadAhead_eachCopyIn_comesJustBeforeItsUpdate() {
        assertEquals(List.of(
                "in [4, 4] [4]", "wait [4, 4] [4]", "out [4, 4] [4]",
                "in [5, 5] [5]", "wait [5, 5] [5]", "out [5, 5] [5]",
                "in [6, 6] [6]", "wait [6, 6] [6]", "out [6, 6] [6]"), secondStep(false));
    }

    @Test
    void workingMemory_staysAtTwoParametersBuffers_whateverTheShapes() {
        for (StateStorage storage : List.of(StateStorage.files(dir), StateStorage.files(dir).withReadAhead(false),
                StateStorage.hostMemory(), StateStorage.hostMemory().withReadAhead(false))) {
            torch.manual_seed(19);
            List<Tensor> params = new ArrayList<>();
            // Twelve parameters of six shapes, the largest 18×24 (1728 bytes of momentum, 72 of second moment).
            for (int k = 0; k < 12; k++) {
                params.add(torch.randn(8 + (k % 6) * 2, 24));
            }
            Muon.Builder builder = Muon.builder().addGroup(params, MuonConfig.defaults().withNorMuon(0.95, 1e-8)
                    .withBatchSameShape(false)).stateStorage(storage);
            if (storage.place() == StateStorage.Place.HOST_MEMORY) {
                builder.cpuAsAccelerator(DeviceTransfers.synchronous());
            }
            Muon muon = builder.build();
            for (int step = 1; step <= 3; step++) {
                gradients(params, step);
                muon.step();
            }
            long slab = 18 * 24 * 4;
            long bound = storage.readAhead() ? 4 * slab : 2 * slab;
            assertTrue(muon.workingStateBytes() <= bound, storage + ": " + muon.workingStateBytes()
                    + " bytes of working memory, more than " + bound + " (two buffers of each parameter in flight)");
            assertTrue(muon.workingStateBytes() > 0, storage + ": no working memory: the state never moved");
            muon.close();
        }
    }
}
