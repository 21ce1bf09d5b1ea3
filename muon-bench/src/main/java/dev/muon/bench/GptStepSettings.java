package dev.muon.bench;

import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;

/**
 * The Muon side of {@link MuonStepBenchmark}'s {@code muon-adamw} entry over the GPT-2-small-width set, which
 * {@link SameProcessStep} and {@link StepFaults} measure as well (lr 0.02, the rest at {@link MuonConfig}'s defaults,
 * as the PyTorch peer).
 */
final class GptStepSettings {
    private GptStepSettings() {
    }

    /** The {@code muon-adamw} entry's Muon side with the kernel chosen by size and same-shape batching on. */
    static MuonConfig muonSide(NsPrecision precision) {
        return MuonConfig.defaults().withLr(0.02).withNsPrecision(precision)
                .withNsAlgorithm(NsAlgorithm.AUTO).withBatchSameShape(true);
    }
}
