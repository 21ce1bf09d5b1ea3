package dev.muon.examples;

import dev.muon.state.CheckpointFile;
import dev.muon.state.OptimizerState;
import dev.muon.state.ParameterEntry;

import java.nio.file.Path;

/**
 * The Java snippets of {@code docs/checkpoints.md} about the optimizer-state value, compiled here and run by
 * {@link DocSnippetsStateTest}; {@link DocSnippetsTest} checks that the page's blocks are pieces of this file.
 */
final class DocSnippetsState {
    private DocSnippetsState() {
    }

    // docs/checkpoints.md, "One state, two files".
    static OptimizerState inspect(Path ckpt) {
        OptimizerState saved = CheckpointFile.read(ckpt);
        System.out.println("step " + saved.step() + ", Muon lr " + saved.muonConfigs().get(0).lr());
        for (ParameterEntry entry : saved.entries()) {
            System.out.println(entry.spec());
        }
        return saved;
    }
}
