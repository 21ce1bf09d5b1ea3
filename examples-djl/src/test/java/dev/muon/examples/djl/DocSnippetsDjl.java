package dev.muon.examples.djl;

import ai.djl.Model;
import ai.djl.nn.Block;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.MuonConfig;
import dev.muon.NonFinitePolicy;
import dev.muon.djl.Muon;
import dev.muon.djl.MuonAdamW;

/**
 * The Java snippets of {@code docs/djl.md}, compiled here and run by {@link DocSnippetsDjlTest}, which also checks
 * that every {@code java} block of that page is a piece of this file. Edit a snippet here first, then paste it into
 * the page.
 */
final class DocSnippetsDjl {
    private DocSnippetsDjl() {
    }

    static Optimizer oneLineSwap(Block block) {
        // Optimizer optimizer = Optimizer.adam().optLearningRateTracker(Tracker.fixed(1e-3f)).build();
        Optimizer optimizer = MuonAdamW.builder().optBlock(block).optLearningRateTracker(Tracker.fixed(1e-3f)).build();
        return optimizer;
    }

    static Trainer trainer(Model model, Optimizer optimizer) {
        DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optOptimizer(optimizer);
        Trainer trainer = model.newTrainer(config);
        return trainer;
    }

    static void printAssignment(MuonAdamW optimizer) {
        System.out.println(optimizer.assignment());
    }

    static MuonAdamW tuned(Block block) {
        MuonAdamW optimizer = MuonAdamW.builder().optBlock(block)
                .optMuon(MuonConfig.defaults().withLr(0.02).withWeightDecay(0.01).withAdjustLr(AdjustLr.ORIGINAL))
                .optAdamW(AdamWConfig.defaults().withLr(3e-4).withBetas(0.9, 0.95).withWeightDecay(0.01))
                .build();
        return optimizer;
    }

    static MuonAdamW scheduled(Block block, int totalSteps) {
        Tracker cosine = Tracker.cosine().setBaseValue(1e-3f).optFinalValue(1e-5f).setMaxUpdates(totalSteps).build();
        MuonAdamW optimizer = MuonAdamW.builder().optBlock(block).optLearningRateTracker(cosine).build();
        return optimizer;
    }

    static Muon plainMuon(Block biasFreeBlock) {
        Muon muon = Muon.builder().optBlock(biasFreeBlock)
                .optConfig(MuonConfig.defaults().withLr(0.02))
                .optNonFinitePolicy(NonFinitePolicy.RAISE)
                .build();
        return muon;
    }
}
