package dev.muon.distributed;

import dev.muon.GradientClipping;
import dev.muon.MuonAdamW;
import dev.muon.state.AssignmentChanges;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The {@code reliability} scenario of {@link ShardedTrainingWorker}, for {@link DistributedReliabilityTest}: the
 * training-loop contracts at W ranks. Gradient accumulation with averaging on (each rank {@link #K} micro-batches
 * of its shard, one step); clipping with the same gradients on every rank; and a checkpoint restored into an
 * optimizer whose assignment changed, both directions. Rank 0 also runs the single-process counterparts.
 */
final class ReliabilityWorker {
    static final int STEPS = 4;
    /** Micro-batches per step: 12 rows, 2 ranks, 3 micro-batches of 2 rows on each. */
    static final int K = 3;
    static final double MAX_NORM = 0.2;
    static final int SAVE_AT = 3;
    static final List<String> DIRECTIONS = List.of("muonToAdamW", "adamWToMuon");

    private ReliabilityWorker() {
    }

    static void run(DistributedGroup group, Path dir) throws IOException {
        int rank = group.rank();
        int world = group.worldSize();
        Map<String, String> stats = new LinkedHashMap<>();
        ShardingConfig exact = ShardingConfig.defaults().withAverageGradients(false);

        // Accumulation, averaging on: the whole batch in one process against k micro-batches of each rank's shard.
        if (rank == 0) {
            TinyClassifier model = new TinyClassifier(7, false);
            MuonAdamW single = ShardedTrainingWorker.builder(model).build();
            for (int step = 1; step <= STEPS; step++) {
                single.zeroGrad();
                model.lossAndBackward(step, 0, 1);
                single.step();
            }
            TensorFiles.write(model.named(), dir.resolve("accumulation-reference.pt"));
        }
        for (int k : new int[]{1, K}) {
            TinyClassifier model = new TinyClassifier(7, false);
            MuonAdamW optimizer = ShardedTrainingWorker.builder(model)
                    .distributed(group, ShardingConfig.defaults()).build();
            List<String> payloads = new ArrayList<>();
            for (int step = 1; step <= STEPS; step++) {
                optimizer.zeroGrad();
                for (int j = 0; j < k; j++) {
                    // Micro-batch j of this rank: rows r with r % (world·k) == rank + world·j, its mean loss / k.
                    model.lossAndBackward(step, rank + world * j, world * k, 1.0 / k);
                }
                long before = group.payloadBytes();
                optimizer.step();
                payloads.add(String.valueOf(group.payloadBytes() - before));
            }
            stats.put("payloadPerStep.k" + k, String.join(",", payloads));
            stats.put("stepCount.k" + k, String.valueOf(optimizer.stepCount()));
            TensorFiles.write(model.named(), dir.resolve("accumulation-k" + k + "-rank" + rank + ".pt"));
            if (k == K) {
                stats.put("clipAveraged",
                        ShardedTrainingWorker.message(() -> GradientClipping.clipGradNorm(optimizer, MAX_NORM)));
            }
        }

        // Clipping with every rank's gradients the whole batch's (averaging off): as one process, bit for bit.
        if (rank == 0) {
            TinyClassifier model = new TinyClassifier(7, false);
            List<String> norms = clipped(model, ShardedTrainingWorker.builder(model).build());
            stats.put("clipNorms", String.join(",", norms));
            TensorFiles.write(model.named(), dir.resolve("clip-reference.pt"));
        }
        TinyClassifier clippedModel = new TinyClassifier(7, false);
        clipped(clippedModel, ShardedTrainingWorker.builder(clippedModel).distributed(group, exact).build());
        TensorFiles.write(clippedModel.named(), dir.resolve("clip-rank" + rank + ".pt"));

        // The documented way to clip with each rank on its shard: average the gradients first, then clip, then a
        // step that does not average again.
        TinyClassifier shardModel = new TinyClassifier(7, false);
        MuonAdamW shardOptimizer = ShardedTrainingWorker.builder(shardModel).distributed(group, exact).build();
        List<String> averagedNorms = new ArrayList<>();
        for (int step = 1; step <= STEPS; step++) {
            shardOptimizer.zeroGrad();
            shardModel.lossAndBackward(step, rank, world);
            Map<String, org.bytedeco.pytorch.Tensor> named = shardModel.named();
            GradientAveraging.averageGradients(group, new ArrayList<>(named.keySet()),
                    new ArrayList<>(named.values()));
            averagedNorms.add(String.valueOf(GradientClipping.clipGradNorm(shardOptimizer, MAX_NORM)));
            shardOptimizer.step();
        }
        stats.put("clipAveragedFirstNorms", String.join(",", averagedNorms));
        TensorFiles.write(shardModel.named(), dir.resolve("clip-averaged-rank" + rank + ".pt"));

        // A checkpoint saved at W ranks, loaded into an optimizer whose fc2.weight moved, at W ranks and in one.
        for (String direction : DIRECTIONS) {
            UnaryOperator<MuonAdamW.Builder> saved = direction.equals("muonToAdamW") ? b -> b
                    : b -> b.forceAdamW("fc2.weight");
            UnaryOperator<MuonAdamW.Builder> resumed = direction.equals("muonToAdamW")
                    ? b -> b.forceAdamW("fc2.weight") : b -> b;
            Path file = dir.resolve("reassign-" + direction + ".ckpt");
            TinyClassifier first = new TinyClassifier(7, false);
            MuonAdamW firstOptimizer = saved.apply(ShardedTrainingWorker.builder(first)).distributed(group, exact)
                    .build();
            train(first, firstOptimizer, 1, SAVE_AT);
            firstOptimizer.save(file);

            TinyClassifier model = new TinyClassifier(99, false);
            MuonAdamW optimizer = resumed.apply(ShardedTrainingWorker.builder(model)).distributed(group, exact)
                    .build();
            stats.put("refused." + direction, ShardedTrainingWorker.message(() -> optimizer.load(file)));
            optimizer.load(file, AssignmentChanges.START_FRESH);
            stats.put("resumedStep." + direction, String.valueOf(optimizer.stepCount()));
            train(model, optimizer, SAVE_AT + 1, STEPS + 2);
            TensorFiles.write(model.named(), dir.resolve("reassign-" + direction + "-rank" + rank + ".pt"));
            if (rank == 0) {
                TinyClassifier plain = new TinyClassifier(99, false);
                MuonAdamW single = resumed.apply(ShardedTrainingWorker.builder(plain)).build();
                single.load(file, AssignmentChanges.START_FRESH);
                train(plain, single, SAVE_AT + 1, STEPS + 2);
                TensorFiles.write(plain.named(), dir.resolve("reassign-" + direction + "-single.pt"));
            }
        }
        ShardedTrainingWorker.writeStats(dir.resolve("reliability-rank" + rank + ".txt"), stats);
    }

    /** {@link #STEPS} steps on the whole batch, each clipped to {@link #MAX_NORM} first; the norms before. */
    private static List<String> clipped(TinyClassifier model, MuonAdamW optimizer) {
        List<String> norms = new ArrayList<>();
        for (int step = 1; step <= STEPS; step++) {
            optimizer.zeroGrad();
            model.lossAndBackward(step, 0, 1);
            norms.add(String.valueOf(GradientClipping.clipGradNorm(optimizer, MAX_NORM)));
            optimizer.step();
        }
        return norms;
    }

    /** Steps {@code first} to {@code last} on the whole batch. */
    private static void train(TinyClassifier model, MuonAdamW optimizer, int first, int last) {
        for (int step = first; step <= last; step++) {
            optimizer.zeroGrad();
            model.lossAndBackward(step, 0, 1);
            optimizer.step();
        }
    }
}
