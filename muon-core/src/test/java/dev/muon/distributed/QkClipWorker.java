package dev.muon.distributed;

import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.QkClip;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code qkclip} scenario of {@link ShardedTrainingWorker}: every rank trains the same attention weights with
 * the same gradients under a distributed {@link Muon} and {@link MuonAdamW} with QK-Clip, but reports logits that
 * only it saw (each rank one head far over {@code τ}); rank 0 also runs the single-process optimizer that is told
 * the maximum of all ranks' reports, and one without the hook.
 */
final class QkClipWorker {
    static final int STEPS = 3;
    static final double TAU = 5;
    static final QkClip.Heads HEADS = QkClip.Heads.of(4, 2);
    static final List<String> NAMES = List.of("attn.q", "attn.k", "mlp");

    private QkClipWorker() {
    }

    static Map<String, Tensor> model() {
        torch.manual_seed(41);
        Map<String, Tensor> m = new LinkedHashMap<>();
        m.put("attn.q", torch.randn(8, 6).requires_grad_(true));
        m.put("attn.k", torch.randn(8, 6).requires_grad_(true));
        m.put("mlp", torch.randn(5, 6).requires_grad_(true));
        return m;
    }

    /** What {@code rank} saw at {@code step}: every head under {@code τ} but one, a different one per rank. */
    static double[] report(int rank, int step) {
        double[] values = new double[HEADS.queryHeads()];
        Arrays.fill(values, 0.5 * TAU);
        values[(rank + step) % values.length] = (2 + rank) * TAU;
        return values;
    }

    /** The elementwise maximum of every rank's report. */
    static double[] union(int world, int step) {
        double[] max = report(0, step);
        for (int rank = 1; rank < world; rank++) {
            double[] r = report(rank, step);
            for (int h = 0; h < max.length; h++) {
                max[h] = Math.max(max[h], r[h]);
            }
        }
        return max;
    }

    private static QkClip clip(Map<String, Tensor> m) {
        return QkClip.builder(m).tau(TAU).layer("attn", "attn.q", "attn.k", HEADS).build();
    }

    private static TrainingOptimizer optimizer(String kind, Map<String, Tensor> m, QkClip clip,
                                               DistributedGroup group) {
        ShardingConfig exact = ShardingConfig.defaults().withAverageGradients(false);
        // W_q and W_k share a shape: one process would orthogonalize them as a batch, two ranks one each, and the
        // batched products round differently. Unbatched, the runs must agree bit for bit.
        MuonConfig config = MuonConfig.defaults().withLr(0.05).withBatchSameShape(false);
        if (kind.equals("muon")) {
            Muon.Builder b = Muon.builder().addGroup(m.values(), config);
            if (clip != null) {
                b.qkClip(clip);
            }
            return (group == null ? b : b.distributed(group, exact)).build();
        }
        MuonAdamW.Builder b = MuonAdamW.builder(m).muon(config);
        if (clip != null) {
            b.qkClip(clip);
        }
        return (group == null ? b : b.distributed(group, exact)).build();
    }

    /** Three steps with the same gradients everywhere; {@code reports} gives a step's report, null for none. */
    private static Map<String, Tensor> train(String kind, DistributedGroup group,
                                             java.util.function.IntFunction<double[]> reports) {
        Map<String, Tensor> m = model();
        QkClip clip = reports == null ? null : clip(m);
        TrainingOptimizer opt = optimizer(kind, m, clip, group);
        for (int step = 1; step <= STEPS; step++) {
            try (PointerScope scope = new PointerScope()) {
                torch.manual_seed(100 + step);
                for (Tensor t : m.values()) {
                    t.mutable_grad().put(torch.randn(t.shape()));
                }
                if (clip != null) {
                    double[] r = reports.apply(step);
                    clip.report("attn", Tensor.create(r).to(torch.ScalarType.Float));
                }
                opt.step();
            }
        }
        return m;
    }

    static void run(DistributedGroup group, Path dir) throws IOException {
        int rank = group.rank();
        int world = group.worldSize();
        Map<String, String> stats = new HashMap<>();
        for (String kind : List.of("muon", "hybrid")) {
            if (rank == 0) {
                TensorFiles.write(train(kind, null, step -> union(world, step)),
                        dir.resolve(kind + "-reference.pt"));
                TensorFiles.write(train(kind, null, null), dir.resolve(kind + "-unclipped.pt"));
            }
            TensorFiles.write(train(kind, group, step -> report(rank, step)),
                    dir.resolve(kind + "-rank" + rank + ".pt"));
        }
        stats.put("done", "true");
        ShardedTrainingWorker.writeStats(dir.resolve("qkclip-rank" + rank + ".txt"), stats);
    }
}
