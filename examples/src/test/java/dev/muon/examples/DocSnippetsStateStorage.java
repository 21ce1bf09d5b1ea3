package dev.muon.examples;

import dev.muon.MuonAdamW;
import dev.muon.StateStorage;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.nio.file.Path;

/**
 * The Java snippet of {@code docs/api.md} about where Muon's state lives, compiled here and run by
 * {@link DocSnippetsStateStorageTest}; {@link DocSnippetsTest} checks that the page's block is a piece of this file.
 */
final class DocSnippetsStateStorage {
    private DocSnippetsStateStorage() {
    }

    // docs/api.md, "Where the state lives".
    static void stateInFiles(FashionMlp model, Tensor images, Tensor labels, Path stateDir, Path checkpoint) {
        try (MuonAdamW optimizer = MuonAdamW.builder(model.named_parameters())
                .muonStateStorage(StateStorage.files(stateDir))   // the Muon state in a file under stateDir
                .build()) {
            for (int step = 0; step < 3; step++) {
                optimizer.zeroGrad();
                torch.cross_entropy_loss(model.forward(images), labels).backward();
                optimizer.step();
            }
            optimizer.save(checkpoint);                           // the same checkpoint as without offload
        }                                                         // close() removes the state file
    }
}
