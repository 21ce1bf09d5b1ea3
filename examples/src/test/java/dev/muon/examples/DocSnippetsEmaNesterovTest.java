package dev.muon.examples;

import dev.muon.EmaNesterov;
import dev.muon.EmaNesterovConfig;
import dev.muon.MuonAdamW;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs api.md's EMA-Nesterov snippet ({@link DocSnippetsEmaNesterov}); {@link DocSnippetsTest} checks it is the page's. */
class DocSnippetsEmaNesterovTest {

    @Test
    void emaNesterovSnippet_trains_andSavesWhatALoadReads(@TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(3);
            FashionMlp model = new FashionMlp();
            Tensor images = torch.randn(8, 784);
            Tensor labels = torch.randint(10, new long[]{8});
            double before = torch.cross_entropy_loss(model.forward(images), labels).item_double();
            try (MuonAdamW trained = DocSnippetsEmaNesterov.emaNesterov(model, images, labels, dir, 12)) {
                assertEquals(12, trained.stepCount());
            }
            assertTrue(torch.cross_entropy_loss(model.forward(images), labels).item_double() < before,
                    "twelve steps lower the loss");
            try (MuonAdamW fresh = MuonAdamW.builder(model.named_parameters()).build();
                 EmaNesterov resumed = EmaNesterov.wrap(fresh, model.named_parameters(),
                         EmaNesterovConfig.defaults().withWindow(2, 9))) {
                fresh.load(dir.resolve("optimizer.ckpt"));
                resumed.load(dir.resolve("ema-nesterov.safetensors"));
                assertEquals(12, resumed.stepCount());
            }
        }
    }
}
