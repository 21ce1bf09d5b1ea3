package dev.muon.examples;

import dev.muon.EmaNesterov;
import dev.muon.EmaNesterovConfig;
import dev.muon.MuonAdamW;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.nio.file.Path;

/**
 * The Java snippet of {@code docs/api.md} about the EMA-Nesterov lookahead, compiled here and run by
 * {@link DocSnippetsEmaNesterovTest}; {@link DocSnippetsTest} checks that the page's block is a piece of this file.
 */
final class DocSnippetsEmaNesterov {
    private DocSnippetsEmaNesterov() {
    }

    // docs/api.md, "EMA-Nesterov lookahead (EmaNesterov)".
    static MuonAdamW emaNesterov(FashionMlp model, Tensor images, Tensor labels, Path dir, long steps) {
        MuonAdamW muonAdamW = MuonAdamW.builder(model.named_parameters()).build();
        EmaNesterov opt = EmaNesterov.wrap(muonAdamW, model.named_parameters(),
                EmaNesterovConfig.defaults().withWindow(steps / 6, steps * 3 / 4));
        LrScheduler lrs = LrScheduler.of(opt, LrSchedule.warmupStableDecay(0, steps / 2, steps / 2, 0.0));
        for (long step = 0; step < steps; step++) {
            lrs.apply(step);                                 // this step's lr first: β_t reads it
            opt.zeroGrad();
            opt.lookahead();                                 // before the forward pass
            torch.cross_entropy_loss(model.forward(images), labels).backward();
            opt.step();
        }
        muonAdamW.save(dir.resolve("optimizer.ckpt"));       // the optimizer's state and the parameters
        opt.save(dir.resolve("ema-nesterov.safetensors"));   // the wrapper's: step count, reference lr, m
        return muonAdamW;
    }
}
