package dev.muon.examples;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The Java snippets of {@code docs/getting-started.md} and {@code docs/hyperparameters.md}, compiled here and run
 * by {@link DocSnippetsTest}, which also checks that every {@code java} block of those pages is a piece of this
 * file. Edit a snippet here first, then paste it into the page.
 */
final class DocSnippets {
    private DocSnippets() {
    }

    static MuonAdamW oneLineSwap(FashionMlp model, Tensor images, Tensor labels) {
        AdamWOptions options = new AdamWOptions(1e-3);
        options.weight_decay().put(0.01);
        // AdamW optimizer = new AdamW(model.parameters(), options);
        MuonAdamW optimizer = MuonAdamW.dropIn(model.named_parameters(), options);
        for (int step = 0; step < 10; step++) {
            try (PointerScope scope = new PointerScope()) {
                optimizer.zero_grad();
                Tensor loss = torch.cross_entropy_loss(model.forward(images), labels);
                loss.backward();
                optimizer.step();
            }
        }
        return optimizer;
    }

    static long readAssignment(MuonAdamW optimizer) {
        System.out.println(optimizer.assignment());
        long ours = optimizer.assignment().stateBytes();
        long adamWAlone = optimizer.assignment().adamWOnlyStateBytes();
        return adamWAlone - ours;
    }

    static MuonAdamW overrideAssignment(FashionMlp model) {
        MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                .adamW(AdamWConfig.defaults().withLr(1e-3))
                .muon(MuonConfig.defaults().withLr(1e-3).withWeightDecay(0.01).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW))
                .forceAdamW("fc1.weight")
                .build();
        return optimizer;
    }

    static MuonAdamW pytorchDefaults(FashionMlp model) {
        MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                .muon(MuonConfig.defaults())
                .adamW(AdamWConfig.defaults())
                .build();
        return optimizer;
    }

    static MuonAdamW kellerJordan(FashionMlp model) {
        MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                .muon(MuonConfig.defaults().withLr(0.02).withWeightDecay(0))
                .adamW(AdamWConfig.defaults().withLr(3e-4).withBetas(0.9, 0.95).withEps(1e-10).withWeightDecay(0))
                .build();
        return optimizer;
    }

    static MuonAdamW moonlight(FashionMlp model) {
        MuonAdamW optimizer = MuonAdamW.dropIn(model.named_parameters(),
                AdamWConfig.defaults().withLr(1e-3).withBetas(0.9, 0.95).withWeightDecay(0.1));
        return optimizer;
    }

    static MuonAdamW tunedAdamW(FashionMlp model) {
        AdamWConfig tuned = AdamWConfig.defaults().withLr(3e-3).withWeightDecay(0.01);
        MuonAdamW optimizer = MuonAdamW.dropIn(model.named_parameters(), tuned);
        // The same thing, spelled out:
        MuonAdamW same = MuonAdamW.builder(model.named_parameters())
                .adamW(tuned)
                .muon(MuonConfig.defaults().withLr(tuned.lr()).withWeightDecay(tuned.weightDecay())
                        .withAdjustLr(AdjustLr.MATCH_RMS_ADAMW))
                .build();
        return same;
    }
}
