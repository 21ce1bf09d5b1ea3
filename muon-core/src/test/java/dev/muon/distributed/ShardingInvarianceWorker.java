package dev.muon.distributed;

import dev.muon.MomentumPrecision;
import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.MuownConfig;
import dev.muon.NorMuonConfig;
import dev.muon.RowSplit;
import dev.muon.StackedWeights;
import dev.muon.ConvWeights;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One rank of {@link ShardingInvarianceTest}: for each configuration, a Muon over every layout (same-shape
 * matrices that batch, a conv filter, a stack, a row split, an empty parameter) sharded over the group without
 * gradient averaging, stepped with the same gradients on every rank, then saved: the file holds every parameter and
 * every owner's state.
 */
final class ShardingInvarianceWorker {
    static final int STEPS = 4;

    private ShardingInvarianceWorker() {
    }

    /** The configurations, by the name their files carry. */
    static Map<String, MuonConfig> configs() {
        MuonConfig base = MuonConfig.defaults().withLr(0.02).withConvWeights(ConvWeights.FLATTEN)
                .withStackedWeights(StackedWeights.BATCH);
        Map<String, MuonConfig> configs = new LinkedHashMap<>();
        configs.put("plain", base);
        configs.put("normuon", base.withNorMuon(NorMuonConfig.defaults()));
        configs.put("variants", base.withCautiousWeightDecay(true).withMomentumPrecision(MomentumPrecision.BFLOAT16)
                .withNesterov(false));
        configs.put("bf16-ns", base.withNsPrecision(NsPrecision.BFLOAT16));
        configs.put("gram", base.withNsAlgorithm(NsAlgorithm.GRAM));
        // Muown is defined for 2-D weights: its run has no conv filter and no stack.
        configs.put("muown", base.withNesterov(false).withNorMuon(NorMuonConfig.defaults())
                .withMuown(MuownConfig.defaults()));
        return configs;
    }

    /**
     * Runs every configuration; {@code local}: as one process without a group (the reference), else sharded over
     * {@code group}.
     */
    static void run(DistributedGroup group, Path dir, boolean local) {
        for (Map.Entry<String, MuonConfig> e : configs().entrySet()) {
            try (PointerScope scope = new PointerScope()) {
                torch.manual_seed(7);
                List<Tensor> params = new ArrayList<>();
                for (int k = 0; k < 4; k++) {
                    params.add(torch.randn(8, 8));
                }
                params.add(torch.randn(6, 10));
                if (e.getValue().muown() == null) {
                    params.add(torch.randn(4, 2, 3, 3));
                    params.add(torch.randn(3, 4, 5));
                }
                Tensor qkv = torch.randn(12, 4);
                params.add(qkv);
                params.add(torch.randn(0, 4));
                params.add(torch.randn(40, 24));
                Muon.Builder builder = Muon.builder().addGroup(params, e.getValue())
                        .rowSplit(qkv, RowSplit.splitRows(4, 4, 4));
                if (!local) {
                    builder.distributed(group, ShardingConfig.defaults().withAverageGradients(false));
                }
                Muon muon = builder.build();
                for (int step = 0; step < STEPS; step++) {
                    torch.manual_seed(100 + step);
                    for (Tensor p : params) {
                        p.mutable_grad().put(torch.randn(p.shape()));
                    }
                    muon.step();
                }
                muon.save(dir.resolve(e.getKey() + (local ? "-local" : "-world" + group.worldSize()) + ".ckpt"));
            }
        }
    }
}
