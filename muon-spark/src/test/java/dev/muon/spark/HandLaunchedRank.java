package dev.muon.spark;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import org.bytedeco.pytorch.global.torch;

import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * One rank of the same training launched by hand, as its own JVM (as muon-core's distributed tests launch theirs):
 * the same {@link TrainingRun} on Spark's slice of the same data, joined with {@link GroupConfig#of}. Rank 0 writes
 * its result to {@code dir/result-hand.bin}.
 *
 * <p>Arguments: {@code rank world port dir steps}.
 */
public final class HandLaunchedRank {
    private HandLaunchedRank() {
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(args[0]);
        int world = Integer.parseInt(args[1]);
        int port = Integer.parseInt(args[2]);
        Path dir = Path.of(args[3]);
        int steps = Integer.parseInt(args[4]);
        torch.set_num_threads(1);
        Files.createDirectories(dir.resolve("checkpoints"));
        List<Sample> shard = Sample.slice(SparkTrainingTest.data(), rank, world);
        try (DistributedGroup group = DistributedGroup.join(GroupConfig.of("127.0.0.1", port, rank, world)
                .withTimeout(Duration.ofSeconds(60)))) {
            TrainingRun.Result result = TrainingRun.sharded(steps)
                    .train(new RankContext(group, 1, 0, dir.resolve("checkpoints"), 0), shard.iterator());
            if (rank == 0) {
                try (ObjectOutputStream out = new ObjectOutputStream(Files.newOutputStream(
                        dir.resolve("result-hand.bin")))) {
                    out.writeObject(result);
                }
            }
        }
    }
}
