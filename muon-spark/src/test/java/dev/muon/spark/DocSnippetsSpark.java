package dev.muon.spark;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.distributed.ShardingConfig;
// The page's imports: same-package imports, so that they can be checked against this file.
import dev.muon.spark.SparkTraining;
import dev.muon.spark.SparkTrainingConfig;
import org.apache.spark.api.java.JavaRDD;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;

import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The code blocks of docs/distributed.md's "On a Spark cluster", compiled here and run by
 * {@code SparkTrainingTest.docSnippet_trainsOnTwoRanks}; examples' {@code DocSnippetsTest} checks that the page
 * holds them as written.
 */
final class DocSnippetsSpark {
    private DocSnippetsSpark() {
    }

    /**
     * What rank 0 hands back.
     *
     * @param steps the optimizer's step count at the end
     * @param loss  the last step's loss on rank 0's shard
     */
    record Report(long steps, double loss) implements Serializable {
    }

    static Report sparkRun(JavaRDD<Sample> samples, String checkpointDir, int steps) {
        SparkTrainingConfig config = SparkTrainingConfig.of(2, checkpointDir)   // 2 ranks, a shared directory
                .withTimeout(Duration.ofMinutes(2));
        return SparkTraining.run(samples, config, (rank, shard) -> {
            List<Sample> mine = new ArrayList<>();                              // this rank's partition
            shard.forEachRemaining(mine::add);
            SmallMlp model = SmallMlp.seeded(42);                               // the same weights on every rank
            MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                    .adamW(AdamWConfig.defaults().withLr(1e-3))
                    .muon(MuonConfig.defaults().withLr(1e-3).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW))
                    .distributed(rank.group(), ShardingConfig.defaults())
                    .build();
            rank.resume(optimizer::load);                                       // a retried stage goes on from here
            double loss = Double.NaN;
            for (long step = optimizer.stepCount(); step < steps; step++) {
                try (PointerScope scope = new PointerScope()) {
                    optimizer.zeroGrad();
                    Tensor batchLoss = model.loss(mine, step * 16, 16);          // 16 rows per rank and step
                    batchLoss.backward();
                    optimizer.step();
                    loss = batchLoss.item_double();
                }
                if ((step + 1) % 10 == 0) {
                    rank.save(optimizer::save);                                 // every rank: a collective
                }
            }
            return new Report(optimizer.stepCount(), loss);                    // rank 0's goes to the driver
        });
    }
}
