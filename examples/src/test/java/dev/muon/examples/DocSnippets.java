package dev.muon.examples;

import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.HyperballConfig;
import dev.muon.MomentumPrecision;
import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.MuownConfig;
import dev.muon.NorMuonConfig;
import dev.muon.RowSplit;
import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GroupConfig;
import dev.muon.distributed.ShardingConfig;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Function;

/**
 * The Java snippets of the README and of {@code docs/getting-started.md}, {@code hyperparameters.md},
 * {@code api.md}, {@code checkpoints.md} and {@code distributed.md}, compiled here and run by {@link DocSnippetsTest}, which also checks
 * that every {@code java} block of those pages is a piece of this file. Edit a snippet here first, then paste it into the page.
 */
final class DocSnippets {
    private DocSnippets() {
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

    // README.md, "Quick start".
    static MuonAdamW readmeQuickStart(QuickStart.Mlp model, Tensor x, Tensor y, int steps) {
        // The options of the AdamW line it replaces: Muon for the hidden matrices, AdamW for the rest.
        AdamWOptions options = new AdamWOptions(1e-3);
        options.weight_decay().put(0.01);
        // AdamW optimizer = new AdamW(model.parameters(), options);
        MuonAdamW optimizer = MuonAdamW.dropIn(model.named_parameters(), options);
        for (int step = 0; step < steps; step++) {
            try (PointerScope scope = new PointerScope()) {
                optimizer.zero_grad();
                torch.cross_entropy_loss(model.forward(x), y).backward();
                optimizer.step();
            }
        }
        return optimizer;
    }

    // docs/api.md, "dev.muon.Muon".
    static List<Muon> apiMuonGroups(List<Tensor> params, List<Tensor> attention, List<Tensor> mlp) {
        Muon single = Muon.of(params, MuonConfig.defaults().withLr(0.02));   // one group
        Muon grouped = Muon.builder()                                        // several groups
                .addGroup(attention, MuonConfig.defaults().withLr(0.02))
                .addGroup(mlp, MuonConfig.defaults().withLr(0.01))
                .build();
        return List.of(single, grouped);
    }

    // docs/api.md, "dev.muon.MuonAdamW".
    static List<MuonAdamW> apiMuonAdamW(FashionMlp model) {
        MuonAdamW opt = MuonAdamW.builder(model.named_parameters())      // or an ordered Map<String, Tensor>
                .muon(MuonConfig.defaults().withLr(0.02))
                .adamW(AdamWConfig.defaults().withLr(3e-3))
                .build();
        System.out.println(opt.assignment());                             // what went where, and why

        MuonAdamW swapped = MuonAdamW.dropIn(model.named_parameters(), new AdamWOptions(3e-4)); // was new AdamW(..)
        return List.of(opt, swapped);
    }

    // docs/api.md, "AdamWConfig": weight decay of biases and norms.
    static MuonAdamW apiNoDecayBelow2D(FashionMlp model) {
        MuonAdamW opt = MuonAdamW.builder(model.named_parameters())
                .adamW(AdamWConfig.defaults().withLr(3e-4).withWeightDecay(0.1))
                .noWeightDecayBelow2D(true)                                // nanoGPT's split
                .build();
        return opt;
    }

    // docs/api.md, "Split and per-head Newton–Schulz (RowSplit)".
    static MuonAdamW apiRowSplit(java.util.Map<String, Tensor> named, int d, int headDim) {
        MuonAdamW opt = MuonAdamW.builder(named)
                .rowSplit("attn.qkv.weight", RowSplit.splitRows(d, d, d))      // fused [3d, d]: Q, K, V apart
                .rowSplitWhen((name, p) -> name.endsWith(".q_proj.weight"),   // W_q [heads·headDim, d]
                        RowSplit.perHead(headDim))
                .build();
        System.out.println(opt.assignment());                                 // "NS per row block ..."
        return opt;
    }

    // docs/checkpoints.md, "Resuming a run".
    static MuonAdamW resumableRun(FashionMlp model, Tensor images, Tensor labels, Path ckpt, long totalSteps) {
        MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters()).build();
        if (Files.exists(ckpt)) {
            optimizer.load(ckpt);                 // parameters, state, configs, step count, schedule record
        }
        LrScheduler lrs = LrScheduler.of(optimizer, LrSchedule.warmupCosine(200, 10_000, 0.1)); // base lrs: the record's
        while (optimizer.stepCount() < totalSteps) {
            lrs.apply(optimizer.stepCount());
            optimizer.zeroGrad();
            torch.cross_entropy_loss(model.forward(images), labels).backward();
            optimizer.step();
            if (optimizer.stepCount() % 500 == 0) {
                optimizer.save(ckpt);
            }
        }
        return optimizer;
    }

    // docs/distributed.md, "Use".
    static MuonAdamW distributedRun(GroupConfig config, FashionMlp model, Tensor images, Tensor labels,
                                    Path checkpoint, int steps) {
        try (DistributedGroup group = DistributedGroup.join(config)) {
            MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                    .adamW(AdamWConfig.defaults().withLr(1e-3))
                    .muon(MuonConfig.defaults().withLr(1e-3).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW))
                    .distributed(group, ShardingConfig.defaults())
                    .build();
            for (int step = 0; step < steps; step++) {
                try (PointerScope scope = new PointerScope()) {
                    optimizer.zero_grad();
                    // This rank's shard of the batch; the optimizer averages the gradients over the ranks.
                    torch.cross_entropy_loss(model.forward(images), labels).backward();
                    optimizer.step();
                }
            }
            optimizer.save(checkpoint);
            return optimizer;
        }
    }

    // docs/getting-started.md, Main.java's first statement ("A system-wide libtorch and the first run").
    static void readyLibtorchNatives() throws IOException {
        // The first line of main, before anything touches libtorch:
        Loader.cacheResource(Loader.class, "/org/bytedeco/pytorch/" + Loader.getPlatform() + "/"
                + System.mapLibraryName("torch_cpu"));
    }

    // getting-started.md, "7. Logging".
    // A static field keeps the logger, and so its level, alive.
    private static final java.util.logging.Logger MUON_LOGS = java.util.logging.Logger.getLogger("dev.muon");

    static void quietMuon() {
        MUON_LOGS.setLevel(java.util.logging.Level.WARNING);
    }

    // api.md, "NorMuon (withNorMuon)".
    static Tensor norMuon(List<Tensor> hiddenMatrices, Function<List<Tensor>, Tensor> loss, int steps) {
        MuonConfig config = MuonConfig.defaults().withLr(0.02)
                .withNorMuon(NorMuonConfig.defaults());   // beta2 0.95, eps 1e-10
        Muon muon = Muon.of(hiddenMatrices, config);
        for (int step = 0; step < steps; step++) {
            try (PointerScope scope = new PointerScope()) {
                muon.zeroGrad();
                loss.apply(hiddenMatrices).backward();
                muon.step();
            }
        }
        // One float32 second moment per row, beside the momentum buffer.
        Tensor v = muon.secondMoment(hiddenMatrices.get(0)).orElseThrow();
        return v;
    }

    // api.md, "Momentum in bfloat16 (withMomentumPrecision)".
    static Muon leanMuon(List<Tensor> hiddenMatrices) {
        MuonConfig lean = MuonConfig.defaults().withLr(0.02)
                .withCautiousWeightDecay(true)                        // decay where update and weight agree in sign
                .withMomentumPrecision(MomentumPrecision.BFLOAT16);   // half the momentum bytes
        Muon muon = Muon.of(hiddenMatrices, lean);
        return muon;
    }

    // api.md, "Hyperball (withHyperball)".
    static Muon sphereMuon(List<Tensor> hiddenMatrices) {
        MuonConfig sphere = MuonConfig.defaults().withLr(0.02).withWeightDecay(0)
                .withHyperball(HyperballConfig.defaults());
        return Muon.of(hiddenMatrices, sphere);
    }

    // api.md, "Muown (withMuown)".
    static Muon rowNormMuon(List<Tensor> hiddenMatrices) {
        MuonConfig rowNorms = MuonConfig.defaults().withLr(0.02).withNesterov(false)
                .withAdjustLr(AdjustLr.MATCH_RMS_ADAMW).withExtraScale(5)   // Emerging-Optimizers' "spectral"
                .withMuown(MuownConfig.defaults());                         // betas 0.9/0.95, adamEps 1e-8
        Muon muon = Muon.of(hiddenMatrices, rowNorms);
        return muon;
    }

    // docs/api.md, "PyTorch-compatible optimizer state".
    static MuonAdamW torchStateExchange(FashionMlp model, Tensor images, Tensor labels, Path dir) {
        MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters()).build();
        optimizer.zeroGrad();
        torch.cross_entropy_loss(model.forward(images), labels).backward();
        optimizer.step();
        // Python: torch.load("optimizer.pt") -> {"muon": ..., "adamw": ..., "param_names": [...], "step": ...}
        optimizer.exportTorchStateDict(dir.resolve("optimizer.pt"));
        // Back from Python (torch.save of the same layout), into an optimizer over the same parameters:
        MuonAdamW resumed = MuonAdamW.builder(model.named_parameters()).build();
        resumed.importTorchStateDict(dir.resolve("optimizer.pt"));
        return resumed;
    }
}
