package dev.muon.distributed;

import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A group of one in this JVM: the argument checks, the failure to form a group, and W = 1 training. */
class DistributedGroupTest {
    @RegisterExtension
    static final GroupOfOne SINGLE = new GroupOfOne();

    @Test
    void groupOfOne_collectivesAreIdentities() {
        try (PointerScope scope = new PointerScope()) {
            assertArrayEquals(new long[]{42}, SINGLE.group().allGather(42, "a test value"));
            Tensor t = torch.arange(new org.bytedeco.pytorch.Scalar(6)).to(torch.ScalarType.Float);
            long before = SINGLE.group().payloadBytes();
            SINGLE.group().allReduceSum(t, "a test tensor");
            SINGLE.group().broadcast(t, 0, "a test tensor");
            SINGLE.group().barrier("a test");
            assertTrue(t.equal(torch.arange(new org.bytedeco.pytorch.Scalar(6)).to(torch.ScalarType.Float)));
            assertEquals(before + 2 * 6 * 4, SINGLE.group().payloadBytes());
        }
    }

    @Test
    void broadcast_rootOutsideGroup_isRejected() {
        try (PointerScope scope = new PointerScope()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SINGLE.group().broadcast(torch.ones(2), 1, "x"));
            assertEquals("root must be a rank in [0, 1), got 1", e.getMessage());
        }
    }

    @Test
    void send_toItself_isRejected() {
        try (PointerScope scope = new PointerScope()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SINGLE.group().send(torch.ones(2), 0, 0, "x"));
            assertEquals("to must be another rank than this one (0), got 0", e.getMessage());
        }
    }

    @Test
    void coalescedAllReduce_ofMixedDtypes_isRejected() {
        try (PointerScope scope = new PointerScope()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> SINGLE.group().allReduceSum(List.of(torch.ones(2), torch.ones(2).to(torch.ScalarType.Double)),
                            "grads"));
            assertEquals("tensors must share one dtype for a coalesced all-reduce of grads, got Float and Double",
                    e.getMessage());
        }
    }

    /** A tensor the backend cannot take is refused before the collective, and the group goes on working. */
    @Test
    void aTensorTheBackendCannotTake_isRefusedByName_andTheGroupStaysUsable() {
        try (PointerScope scope = new PointerScope()) {
            Tensor transposed = torch.ones(3, 4).t();
            assertEquals("tensor of the all-reduce of x must be contiguous, got shape [4, 3] with strides [1, 4]",
                    assertThrows(IllegalArgumentException.class,
                            () -> SINGLE.group().allReduceSum(transposed, "x")).getMessage());
            assertEquals("tensors[1] of the all-reduce of grads must be contiguous, got shape [4, 3] with strides "
                    + "[1, 4]", assertThrows(IllegalArgumentException.class,
                            () -> SINGLE.group().allReduceSum(List.of(torch.ones(2), transposed), "grads"))
                    .getMessage());
            assertEquals("tensor of the broadcast of x must be a defined tensor, got an undefined one",
                    assertThrows(IllegalArgumentException.class,
                            () -> SINGLE.group().broadcast(new Tensor(), 0, "x")).getMessage());
            assertEquals("tensor must not be null", assertThrows(NullPointerException.class,
                    () -> SINGLE.group().allReduceSum((Tensor) null, "x")).getMessage());
            Tensor t = torch.ones(2);
            SINGLE.group().allReduceSum(t, "after the refusals");
            assertTrue(t.equal(torch.ones(2)), "the group still works");
        }
    }

    @Test
    void closedGroup_refusesCollectives() throws Exception {
        DistributedGroup group = DistributedGroup.join(GroupConfig.of("127.0.0.1", WorkerLauncher.freePort(), 0,
                1));
        group.close();
        group.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> group.barrier("the end"));
        assertEquals("barrier at the end on a closed DistributedGroup", e.getMessage());
    }

    /** Rank 0 of two, alone: the backend waits for rank 1 until the timeout, then names the step that failed. */
    @Test
    void missingRank_failsTheJoinWithinTheTimeout() throws Exception {
        GroupConfig config = GroupConfig.of("127.0.0.1", WorkerLauncher.freePort(), 0, 2)
                .withTimeout(Duration.ofSeconds(2));
        long start = System.nanoTime();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> DistributedGroup.join(config));
        long waited = (System.nanoTime() - start) / 1_000_000;
        assertTrue(e.getMessage().startsWith("forming the GLOO process group"), e.getMessage());
        assertTrue(e.getMessage().contains("timeout 2000 ms"), e.getMessage());
        assertTrue(waited < 2_000 + 5_000, "waited " + waited + " ms");
    }

    /** Rank 1 with nobody at rank 0's address: the store connection fails within the timeout. */
    @Test
    void absentStore_failsTheJoinWithinTheTimeout() throws Exception {
        GroupConfig config = GroupConfig.of("127.0.0.1", WorkerLauncher.freePort(), 1, 2)
                .withTimeout(Duration.ofSeconds(2));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> DistributedGroup.join(config));
        assertTrue(e.getMessage().startsWith("connecting to rank 0's rendezvous store at 127.0.0.1:"),
                e.getMessage());
    }

    @Test
    void nccl_withoutCuda_isUnsupported_withTheReason() {
        GroupConfig config = GroupConfig.of("127.0.0.1", 29999, 0, 1).withBackend(CollectiveBackend.NCCL);
        org.junit.jupiter.api.Assumptions.assumeFalse(torch.cuda_is_available(),
                "this process has CUDA; the NCCL path is exercised by the GPU profile instead");
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> DistributedGroup.join(config));
        assertTrue(e.getMessage().startsWith("the NCCL backend is not available in this process: "),
                e.getMessage());
        assertTrue(e.getMessage().contains("CUDA"), e.getMessage());
    }

    @Test
    void distributedMuon_needsContiguousParameters() {
        try (PointerScope scope = new PointerScope()) {
            Tensor weight = torch.randn(8, 4).t().requires_grad_(true);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Muon.builder()
                    .addGroup(List.of(weight), MuonConfig.defaults())
                    .distributed(SINGLE.group(), ShardingConfig.defaults()).build());
            assertEquals("parameter 0 of group 0 is not contiguous; a distributed optimizer broadcasts parameters "
                    + "in place and needs contiguous ones", e.getMessage());
        }
    }

    @Test
    void builders_rejectNullGroupAndConfig() {
        assertEquals("group must not be null", assertThrows(NullPointerException.class,
                () -> Muon.builder().distributed(null, ShardingConfig.defaults())).getMessage());
        assertEquals("sharding config must not be null", assertThrows(NullPointerException.class,
                () -> Muon.builder().distributed(SINGLE.group(), null)).getMessage());
        assertEquals("syncPrecision must not be null", assertThrows(NullPointerException.class,
                () -> ShardingConfig.defaults().withSyncPrecision(null)).getMessage());
    }

    /** W = 1 is a plain optimizer with extra steps: same bits as without a group, all state on this rank. */
    @Test
    void groupOfOne_trainsExactlyLikeASingleProcess() {
        try (PointerScope scope = new PointerScope()) {
            TinyClassifier plain = new TinyClassifier(7, false);
            ShardedTrainingWorker.run(plain, ShardedTrainingWorker.builder(plain).build(), 1, 0, 1, null);
            TinyClassifier sharded = new TinyClassifier(7, false);
            MuonAdamW optimizer = ShardedTrainingWorker.builder(sharded)
                    .distributed(SINGLE.group(), ShardingConfig.defaults()).build();
            ShardedTrainingWorker.run(sharded, optimizer, 1, 0, 1, null);
            Map<String, Tensor> a = plain.named();
            Map<String, Tensor> b = sharded.named();
            for (String name : a.keySet()) {
                assertTrue(a.get(name).equal(b.get(name)), name);
            }
            assertEquals(1.0, optimizer.shardPlan().orElseThrow().imbalance());
            assertEquals(4 * 4L * (48 * 24 + 48 * 48 + 48 * 48 + 24 * 48) / 4, optimizer.muonStateBytes());
        }
    }
}
