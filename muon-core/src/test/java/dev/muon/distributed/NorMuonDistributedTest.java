package dev.muon.distributed;

import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NorMuon shards: its second moments live on the owning rank like the momentum, and a checkpoint gathers them
 * ({@link ShardingInvarianceTest} checks the bits over 1, 2 and 3 ranks). Here, in a group of one: both optimizers
 * build, step, save and load.
 */
class NorMuonDistributedTest {
    @RegisterExtension
    static final GroupOfOne SINGLE = new GroupOfOne();

    @Test
    void distributedMuon_withNorMuon_stepsSavesAndLoads(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        try (PointerScope scope = new PointerScope()) {
            Tensor w = torch.randn(4, 6);
            Muon muon = Muon.builder()
                    .addGroup(List.of(w), MuonConfig.defaults().withNorMuon(NorMuonConfig.defaults()))
                    .distributed(SINGLE.group(), ShardingConfig.defaults()).build();
            w.mutable_grad().put(torch.randn(4, 6));
            muon.step();
            Tensor v = muon.secondMoment(w).orElseThrow().clone();
            java.nio.file.Path file = dir.resolve("normuon.ckpt");
            muon.save(file);
            w.mutable_grad().put(torch.randn(4, 6));
            muon.step();
            muon.load(file);
            assertTrue(muon.secondMoment(w).orElseThrow().equal(v));
            assertEquals(1, muon.stepCount());
        }
    }

    @Test
    void distributedMuonAdamW_withNorMuon_builds() {
        try (PointerScope scope = new PointerScope()) {
            Map<String, Tensor> named = new LinkedHashMap<>();
            named.put("fc1.weight", torch.randn(4, 6).requires_grad_(true));
            named.put("fc1.bias", torch.randn(4).requires_grad_(true));
            named.put("head.weight", torch.randn(3, 4).requires_grad_(true));
            MuonAdamW opt = MuonAdamW.builder(named)
                    .muon(MuonConfig.defaults().withNorMuon(NorMuonConfig.defaults()))
                    .distributed(SINGLE.group(), ShardingConfig.defaults()).build();
            for (Tensor t : named.values()) {
                t.mutable_grad().put(torch.randn(t.shape()));
            }
            opt.step();
            assertEquals(1, opt.stepCount());
        }
    }
}
