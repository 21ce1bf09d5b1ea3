package dev.muon.examples;

import dev.muon.MuonAdamW;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DocSnippetsStateStorageTest {
    @Test
    void stateInFilesSnippet_trains_savesWhatALoadReads_andRemovesItsFile(@TempDir Path dir) throws IOException {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(2);
            FashionMlp model = new FashionMlp();
            Tensor images = torch.randn(8, 784);
            Tensor labels = torch.randint(10, new long[]{8});
            Path stateDir = Files.createDirectory(dir.resolve("state"));
            Path checkpoint = dir.resolve("run.ckpt");
            DocSnippetsStateStorage.stateInFiles(model, images, labels, stateDir, checkpoint);
            try (Stream<Path> left = Files.list(stateDir)) {
                assertEquals(List.of(), left.toList(), "close() left the state file");
            }
            MuonAdamW resumed = MuonAdamW.builder(model.named_parameters()).build();
            resumed.load(checkpoint);
            assertEquals(3, resumed.stepCount());
            assertTrue(resumed.muonState("fc1.weight").isPresent(), "the checkpoint holds no Muon momentum");
        }
    }
}
