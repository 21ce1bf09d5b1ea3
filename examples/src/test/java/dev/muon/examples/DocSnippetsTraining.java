package dev.muon.examples;

import dev.muon.GradientClipping;
import dev.muon.MuonAdamW;
import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GradientAveraging;
import dev.muon.schedule.LrScheduler;
import dev.muon.state.AssignmentChanges;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.nio.file.Path;
import java.util.List;

/**
 * The Java snippets of {@code docs/api.md}, {@code docs/distributed.md} and {@code docs/checkpoints.md} about
 * training loops (accumulation, clipping, a group's lr, a resume after the assignment changed), compiled here and
 * run by {@link DocSnippetsTrainingTest}; {@link DocSnippetsTest} checks that the pages' blocks are pieces of this
 * file.
 */
final class DocSnippetsTraining {
    private DocSnippetsTraining() {
    }

    // docs/api.md, "Gradient accumulation and clipping" (and docs/distributed.md).
    static double accumulateAndClip(FashionMlp model, MuonAdamW optimizer, List<Tensor> images, List<Tensor> labels) {
        int microBatches = images.size();
        optimizer.zeroGrad();
        for (int i = 0; i < microBatches; i++) {
            Tensor loss = torch.cross_entropy_loss(model.forward(images.get(i)), labels.get(i));
            // Each loss is a mean over its micro-batch: divided by their number, the sum is the batch's mean.
            loss.div(new Scalar(microBatches)).backward();
        }
        double norm = GradientClipping.clipGradNorm(optimizer, 1.0);   // the norm before clipping
        optimizer.step();
        return norm;
    }

    // docs/api.md, "Schedules".
    static void halveMuonLr(LrScheduler lrs) {
        lrs.setBaseLr(MuonAdamW.MUON_GROUP, lrs.baseLr(MuonAdamW.MUON_GROUP) / 2);   // AdamW's base lr stays
    }

    // docs/distributed.md, "Gradient accumulation".
    static double clipAfterAveraging(DistributedGroup group, FashionMlp model, MuonAdamW optimizer, Tensor images,
                                     Tensor labels) {
        optimizer.zeroGrad();
        torch.cross_entropy_loss(model.forward(images), labels).backward();   // this rank's shard (or micro-batches)
        GradientAveraging.averageGradients(group, model.named_parameters());  // once, after the last backward
        double norm = GradientClipping.clipGradNorm(optimizer, 1.0);          // the same norm on every rank
        optimizer.step();                                                     // built withAverageGradients(false)
        return norm;
    }

    // docs/checkpoints.md, "When the assignment changed".
    static MuonAdamW resumeWithFc2OnAdamW(FashionMlp model, Path ckpt) {
        MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters()).forceAdamW("fc2.weight").build();
        // fc2.weight was on Muon when ckpt was saved: it gets its saved value and fresh AdamW moments.
        optimizer.load(ckpt, AssignmentChanges.START_FRESH);
        return optimizer;
    }
}
