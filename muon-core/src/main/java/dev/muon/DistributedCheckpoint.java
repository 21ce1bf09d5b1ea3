package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.ShardPlan;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Saves and loads a distributed {@link MuonAdamW} in the single-process {@link Checkpoint} format, so that a file
 * saved by {@code W} ranks loads into {@code W'} ranks, or into one process without a group.
 *
 * <p>Save: every owner sends its momentum buffers to rank 0, which writes the file (atomically, as ever) and then
 * tells every rank whether it succeeded. Parameters and AdamW state are the same on every rank, so rank 0's are
 * written. Load: every rank reads the same file (a shared file system, or a copy on each machine), checks it
 * against its optimizer, and the ranks agree that all of them succeeded before any of them changes anything; each
 * then keeps the momentum of the parameters it owns under its own plan.
 */
final class DistributedCheckpoint {
    private DistributedCheckpoint() {
    }

    static void save(MuonAdamW optimizer, DistributedGroup group, Path path) {
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            List<Tensor> params = optimizer.muonParams();
            Muon muon = optimizer.muon();
            // An empty Muon group has no plan and no parameters: the loop below does nothing then.
            ShardPlan plan = muon == null ? null : muon.shardPlan().orElseThrow();
            int n = params.size();
            // Which buffers exist: each owner marks its own, the sum tells every rank.
            long[] mine = new long[n];
            for (int i = 0; i < n; i++) {
                if (plan.owner(i) == group.rank() && muon.momentumBuffer(params.get(i)).isPresent()) {
                    mine[i] = 1;
                }
            }
            long[] has = group.allReduceSum(mine, "the momentum-presence mask for a checkpoint");

            List<Tensor> momentum = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Tensor buffer = null;
                int owner = plan.owner(i);
                if (has[i] != 0) {
                    String what = "the momentum of Muon parameter " + i + " ('" + optimizer.muonNames().get(i)
                            + "') for a checkpoint";
                    if (owner == group.rank()) {
                        buffer = muon.momentumBuffer(params.get(i)).orElseThrow();
                        if (group.rank() != 0) {
                            group.send(buffer, 0, i, what);
                        }
                    } else if (group.rank() == 0) {
                        buffer = torch.empty_like(params.get(i));
                        group.receive(buffer, owner, i, what);
                    }
                }
                momentum.add(buffer);
            }

            RuntimeException failure = null;
            if (group.rank() == 0) {
                try {
                    Checkpoint.save(optimizer, path, momentum);
                } catch (RuntimeException e) {
                    failure = e;
                }
            }
            // Only rank 0 writes, so the sum is rank 0's status.
            long[] failed = group.allReduceSum(new long[]{failure == null ? 0 : 1}, "the checkpoint's save status");
            if (failure != null) {
                throw failure;
            }
            if (failed[0] != 0) {
                throw new UncheckedIOException(new IOException("rank 0 could not write checkpoint " + path
                        + " (see rank 0's error); the previous file, if any, is intact"));
            }
        }
    }

    static void load(MuonAdamW optimizer, DistributedGroup group, Path path) {
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            Checkpoint.Restore restore = RankAgreement.agree(group, "checkpoint " + path,
                    () -> Checkpoint.read(optimizer, path), r -> "read");
            restore.apply();
        }
    }
}
