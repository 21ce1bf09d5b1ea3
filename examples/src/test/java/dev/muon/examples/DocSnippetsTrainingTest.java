package dev.muon.examples;

import dev.muon.MuonAdamW;
import dev.muon.OptimizerKind;
import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import dev.muon.distributed.ShardingConfig;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DocSnippetsTrainingTest {
    private static final int BATCH = 16;

    /** Four micro-batches through the snippet end where the whole batch, clipped alike, ends (float32 rounding). */
    @Test
    void accumulateAndClipSnippet_equalsTheWholeBatch() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(6);
            Tensor images = torch.randn(BATCH, 1, 28, 28);
            Tensor labels = torch.randint(10, new long[]{BATCH});
            torch.manual_seed(7);
            FashionMlp whole = new FashionMlp();
            torch.manual_seed(7);
            FashionMlp micro = new FashionMlp();
            MuonAdamW wholeOptimizer = MuonAdamW.builder(whole.named_parameters()).build();
            MuonAdamW microOptimizer = MuonAdamW.builder(micro.named_parameters()).build();
            double wholeNorm = DocSnippetsTraining.accumulateAndClip(whole, wholeOptimizer, List.of(images),
                    List.of(labels));
            double microNorm = DocSnippetsTraining.accumulateAndClip(micro, microOptimizer,
                    List.of(images.narrow(0, 0, 4), images.narrow(0, 4, 4), images.narrow(0, 8, 4),
                            images.narrow(0, 12, 4)),
                    List.of(labels.narrow(0, 0, 4), labels.narrow(0, 4, 4), labels.narrow(0, 8, 4),
                            labels.narrow(0, 12, 4)));
            assertTrue(wholeNorm > 1.0, "the clip must act: norm " + wholeNorm);
            assertEquals(wholeNorm, microNorm, 1e-5 * wholeNorm);
            var a = whole.named_parameters();
            var b = micro.named_parameters();
            for (long i = 0; i < a.size(); i++) {
                double diff = a.get(i).value().sub(b.get(i).value()).abs().max().item_double();
                assertTrue(diff <= 1e-5, a.get(i).key().getString() + " differs by " + diff);
            }
        }
    }

    /** The distributed clipping snippet, with a group of one: it averages, clips and steps. */
    @Test
    void clipAfterAveragingSnippet_clipsAndSteps() throws Exception {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(9);
            FashionMlp model = new FashionMlp();
            int port;
            try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
                port = socket.getLocalPort();
            }
            try (DistributedGroup group = DistributedGroup.join(GroupConfig.of("127.0.0.1", port, 0, 1))) {
                MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                        .distributed(group, ShardingConfig.defaults().withAverageGradients(false)).build();
                double norm = DocSnippetsTraining.clipAfterAveraging(group, model, optimizer,
                        torch.randn(8, 1, 28, 28), torch.randint(10, new long[]{8}));
                assertTrue(norm > 0 && Double.isFinite(norm), "norm " + norm);
                assertEquals(1, optimizer.stepCount());
            }
        }
    }

    @Test
    void halveMuonLrSnippet_changesMuonsBaseOnly() {
        try (PointerScope scope = new PointerScope()) {
            MuonAdamW optimizer = MuonAdamW.builder(new FashionMlp().named_parameters()).build();
            LrScheduler lrs = LrScheduler.of(optimizer, LrSchedule.constant());
            double adamW = lrs.baseLr(MuonAdamW.ADAMW_GROUP);
            double muon = lrs.baseLr(MuonAdamW.MUON_GROUP);
            DocSnippetsTraining.halveMuonLr(lrs);
            lrs.apply(0);
            assertEquals(muon / 2, optimizer.lr(MuonAdamW.MUON_GROUP));
            assertEquals(adamW, optimizer.lr(MuonAdamW.ADAMW_GROUP));
        }
    }

    @Test
    void resumeSnippet_movesFc2ToAdamW_andRestoresTheRest(@TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(8);
            FashionMlp model = new FashionMlp();
            MuonAdamW before = MuonAdamW.builder(model.named_parameters()).build();
            before.zeroGrad();
            torch.cross_entropy_loss(model.forward(torch.randn(4, 1, 28, 28)), torch.randint(10, new long[]{4}))
                    .backward();
            before.step();
            Path ckpt = dir.resolve("run.ckpt");
            before.save(ckpt);
            MuonAdamW after = DocSnippetsTraining.resumeWithFc2OnAdamW(new FashionMlp(), ckpt);
            assertEquals(1, after.stepCount());
            assertEquals(List.of("fc1.weight"), after.assignment().names(OptimizerKind.MUON));
            assertTrue(after.adamWState("fc2.weight").isEmpty(), "fc2.weight starts without moments");
            assertTrue(after.adamWState("head.weight").isPresent(), "the head's moments were restored");
        }
    }
}
