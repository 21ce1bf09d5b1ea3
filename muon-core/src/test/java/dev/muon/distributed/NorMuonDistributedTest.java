package dev.muon.distributed;

import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * NorMuon is refused by a distributed optimizer at build: its second moments would live on the owning rank and
 * are not gathered for checkpoints.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NorMuonDistributedTest {
    private static final String MESSAGE = "norMuon is not supported by a distributed Muon: group 0 has "
            + "NorMuonConfig[beta2=0.95, eps=1.0E-10]; its per-row second moments are not gathered for checkpoints "
            + "yet. Build without distributed(...) or without withNorMuon(...)";
    private DistributedGroup single;

    @BeforeAll
    void join() throws Exception {
        single = WorkerLauncher.groupOfOne();
    }

    @AfterAll
    void leave() {
        single.close();
    }

    @Test
    void distributedMuon_withNorMuon_isRefusedAtBuild() {
        try (PointerScope scope = new PointerScope()) {
            Muon.Builder builder = Muon.builder()
                    .addGroup(List.of(torch.randn(4, 6)), MuonConfig.defaults().withNorMuon(NorMuonConfig.defaults()))
                    .distributed(single, ShardingConfig.defaults());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, builder::build);
            assertEquals(MESSAGE, e.getMessage());
        }
    }

    @Test
    void distributedMuonAdamW_withNorMuon_isRefusedAtBuild() {
        try (PointerScope scope = new PointerScope()) {
            Map<String, Tensor> named = new LinkedHashMap<>();
            named.put("fc1.weight", torch.randn(4, 6).requires_grad_(true));
            named.put("fc1.bias", torch.randn(4).requires_grad_(true));
            MuonAdamW.Builder builder = MuonAdamW.builder(named)
                    .muon(MuonConfig.defaults().withNorMuon(NorMuonConfig.defaults()))
                    .distributed(single, ShardingConfig.defaults());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, builder::build);
            assertEquals(MESSAGE, e.getMessage());
        }
    }
}
