package dev.muon.distributed;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.CheckpointFile;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Sharding changes no bit of the update (issue 29, item 7): given the same gradients, 1, 2 and 3 ranks over Gloo
 * end with the parameters, momentum and NorMuon second moments of one process without a group, bit for bit, after
 * several steps, for every layout
 * (same-shape batches, a flattened conv filter, a stack, a row split, an empty parameter) and every variant that
 * shards (NorMuon, cautious decay, bfloat16 momentum, bfloat16 and Gram Newton–Schulz, Muown with NorMuon and every
 * one of its per-row buffers and step counts, on 2-D weights only). A same-shape batch runs
 * whole on one rank ({@link dev.muon.distributed.ShardPlan}), so each parameter's update is the computation one
 * process would run. Every process runs libtorch on one thread, so that the same GEMM blocking applies.
 */
@ExtendWith(NativeScopePerTest.class)
class ShardingInvarianceTest {
    @TempDir
    Path dir;

    @Test
    void oneTwoAndThreeRanks_endBitForBitAlike_andAsOneProcess() throws Exception {
        assertEquals(0, WorkerLauncher.run("invariance-local", 1, dir, 120_000, 300, List.of(0))[0],
                WorkerLauncher.logs(dir, "invariance-local", 1));
        for (int world = 1; world <= 3; world++) {
            List<Integer> all = world == 1 ? List.of(0) : world == 2 ? List.of(0, 1) : List.of(0, 1, 2);
            int[] codes = WorkerLauncher.run("invariance", world, dir, 120_000, 300, all);
            for (int code : codes) {
                assertEquals(0, code, WorkerLauncher.logs(dir, "invariance", world));
            }
        }
        for (String config : ShardingInvarianceWorker.configs().keySet()) {
            OptimizerState one = CheckpointFile.read(dir.resolve(config + "-local.ckpt"));
            for (int world = 1; world <= 3; world++) {
                OptimizerState other = CheckpointFile.read(dir.resolve(config + "-world" + world + ".ckpt"));
                assertEquals(one.step(), other.step());
                for (int i = 0; i < one.entries().size(); i++) {
                    ParameterEntry a = one.entries().get(i);
                    ParameterEntry b = other.entries().get(i);
                    String where = config + ", " + world + " ranks, " + a.name();
                    same(a.value(), b.value(), where + " value");
                    assertEquals(a.buffers().keySet(), b.buffers().keySet(), where + " buffers");
                    for (String key : a.buffers().keySet()) {
                        same(a.buffer(key), b.buffer(key), where + " " + key);
                    }
                }
            }
            assertTrue(one.entries().get(0).buffer("momentum") != null, config + ": the run left no momentum");
        }
    }

    private static void same(Tensor a, Tensor b, String what) {
        assertEquals(a == null, b == null, what + " present on one side only");
        if (a != null) {
            assertTrue(a.equal(b), what + " differs");
        }
    }
}
