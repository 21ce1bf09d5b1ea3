package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Muon} over two parameters named {@code a} and {@code b} saved to one of its two files and loaded into a
 * new optimizer over copies of the parameters: {@code "checkpoint"} (muon-core's) or {@code "pytorch"} (a PyTorch
 * state file), as the round-trip tests take their format.
 */
final class SavedMuon {
    private SavedMuon() {
    }

    /**
     * Saves the optimizer's state in {@code dir}.
     *
     * @return the file
     */
    static Path save(Muon muon, Path dir, String format) {
        Path file = dir.resolve(format.equals("checkpoint") ? "state.ckpt" : "optimizer.pt");
        if (format.equals("checkpoint")) {
            muon.save(file);
        } else {
            muon.exportTorchStateDict(file);
        }
        return file;
    }

    /** Loads {@code file} into the optimizer. */
    static void load(Muon muon, Path file, String format) {
        if (format.equals("checkpoint")) {
            muon.load(file);
        } else {
            muon.importTorchStateDict(file);
        }
    }

    /**
     * Copies the parameters, builds a Muon over the copies named {@code a} and {@code b}, and loads {@code file}.
     *
     * @param copies filled with the copies, in the parameters' order
     * @return the resumed optimizer
     */
    static Muon resumed(List<Tensor> params, List<Tensor> copies, MuonConfig config, Path file, String format) {
        params.forEach(p -> copies.add(p.detach().clone().requires_grad_(true)));
        Muon resumed = Muon.builder().addGroup(copies, config).names(List.of("a", "b")).build();
        load(resumed, file, format);
        return resumed;
    }
}
