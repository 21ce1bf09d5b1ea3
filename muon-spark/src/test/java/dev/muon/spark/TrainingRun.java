package dev.muon.spark;

import dev.muon.AdamWConfig;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.distributed.ShardingConfig;
import dev.muon.golden.Tensors;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * The tests' rank function: a small MLP trained with a distributed {@code MuonAdamW} for {@code steps} steps,
 * checkpointing every {@code saveEvery}; rank 0 returns its parameters, its attempt and the step it started at.
 *
 * <p>Sharded (gradient averaging on), each rank steps on its partition's rows; replicated (averaging off), each rank
 * steps on the whole global batch of {@code all}, and the ranks' gradients are equal: the sharding guarantee's
 * setting, in which any world size ends where one process ends, bit for bit.
 *
 * @param steps       steps in all
 * @param saveEvery   a checkpoint after every this many steps
 * @param globalBatch rows per step over all ranks
 * @param all         the whole data set for a replicated run, null for a sharded one
 * @param failRank    the rank that throws once, or -1
 * @param failAt      the step before which it throws
 * @param marker      the file whose creation marks that it has thrown (a retry then runs on)
 */
record TrainingRun(int steps, int saveEvery, int globalBatch, List<Sample> all, int failRank, int failAt,
                   String marker) implements RankFunction<Sample, TrainingRun.Result> {
    /**
     * Rank 0's report.
     *
     * @param parameters every parameter's values, in the model's order
     * @param attempt    the barrier stage's attempt
     * @param startStep  the step this attempt started at (0, or the checkpoint's)
     */
    record Result(LinkedHashMap<String, double[]> parameters, int attempt, long startStep) implements Serializable {
    }

    static TrainingRun sharded(int steps) {
        return new TrainingRun(steps, 2, 12, null, -1, -1, null);
    }

    static TrainingRun replicated(int steps, List<Sample> all) {
        return new TrainingRun(steps, 2, 12, all, -1, -1, null);
    }

    TrainingRun failingOnce(int rank, int step, Path markerFile) {
        return new TrainingRun(steps, saveEvery, globalBatch, all, rank, step, markerFile.toString());
    }

    @Override
    public Result train(RankContext rank, Iterator<Sample> shard) throws Exception {
        List<Sample> rows = new ArrayList<>();
        shard.forEachRemaining(rows::add);
        boolean replicated = all != null;
        List<Sample> source = replicated ? all : rows;
        int batch = replicated ? globalBatch : globalBatch / rank.worldSize();
        try (PointerScope scope = new PointerScope()) {
            Module model = new Module("mlp");
            LinearImpl fc1;
            LinearImpl fc2;
            LinearImpl head;
            // In local mode the ranks are threads of one JVM and share libtorch's default generator: seeding and
            // drawing the initial weights must not interleave, or the ranks start from different weights.
            synchronized (TrainingRun.class) {
                torch.manual_seed(42);
                fc1 = model.register_module("fc1", new LinearImpl(Sample.FEATURES, 16));
                fc2 = model.register_module("fc2", new LinearImpl(16, 16));
                head = model.register_module("head", new LinearImpl(16, Sample.CLASSES));
            }
            MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                    .adamW(AdamWConfig.defaults().withLr(1e-2))
                    .muon(MuonConfig.defaults().withLr(2e-2))
                    .distributed(rank.group(), ShardingConfig.defaults().withAverageGradients(!replicated))
                    .build();
            rank.resume(optimizer::load);
            long start = optimizer.stepCount();
            for (long step = start; step < steps; step++) {
                if (rank.rank() == failRank && step == failAt && !Files.exists(Path.of(marker))) {
                    Files.createFile(Path.of(marker));
                    throw new IllegalStateException("rank " + failRank + " fails once before step " + step);
                }
                try (PointerScope stepScope = new PointerScope()) {
                    float[] x = new float[batch * Sample.FEATURES];
                    long[] y = new long[batch];
                    for (int i = 0; i < batch; i++) {
                        Sample s = source.get((int) ((step * batch + i) % source.size()));
                        System.arraycopy(s.x(), 0, x, i * Sample.FEATURES, Sample.FEATURES);
                        y[i] = s.label();
                    }
                    optimizer.zeroGrad();
                    Tensor h = torch.relu(fc2.forward(torch.relu(fc1.forward(Tensor.create(x, batch,
                            Sample.FEATURES)))));
                    torch.cross_entropy(head.forward(h), Tensor.create(y, batch)).backward();
                    optimizer.step();
                }
                if ((step + 1) % saveEvery == 0) {
                    rank.save(optimizer::save);
                }
            }
            LinkedHashMap<String, double[]> parameters = new LinkedHashMap<>();
            var named = model.named_parameters();
            for (long i = 0; i < named.size(); i++) {
                parameters.put(named.get(i).key().getString(), Tensors.values(named.get(i).value()));
            }
            return new Result(parameters, rank.attempt(), start);
        }
    }
}
