package dev.muon.examples;

import dev.muon.MuonAdamW;
import dev.muon.state.OptimizerState;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

class DocSnippetsStateTest {
    @Test
    void inspectSnippet_readsWhatSaveWrote(@TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            FashionMlp model = new FashionMlp();
            MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters()).build();
            optimizer.zeroGrad();
            torch.cross_entropy_loss(model.forward(torch.randn(4, 784)), torch.randint(10, new long[]{4}))
                    .backward();
            optimizer.step();
            Path ckpt = dir.resolve("run.ckpt");
            optimizer.save(ckpt);
            OptimizerState saved = DocSnippetsState.inspect(ckpt);
            assertEquals(1, saved.step());
            assertEquals(optimizer.muonConfig(), saved.muonConfigs().get(0));
            assertEquals(model.named_parameters().size(), saved.entries().size());
        }
    }
}
