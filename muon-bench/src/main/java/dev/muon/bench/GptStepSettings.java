package dev.muon.bench;

import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;

/**
 * What the step programs over the GPT-2-small-width set share: the Newton–Schulz dtype they take by name, and the
 * Muon side of {@link MuonStepBenchmark}'s {@code muon-adamw} entry, which {@link SameProcessStep} and
 * {@link StepFaults} measure as well (lr 0.02, the rest at {@link MuonConfig}'s defaults, as the PyTorch peer).
 */
final class GptStepSettings {
    private GptStepSettings() {
    }

    /**
     * @param argument how the caller names the setting in its refusal
     * @param dtype    {@code float32} or {@code bfloat16}
     * @throws IllegalArgumentException naming {@code argument} for any other dtype: none is taken for float32
     */
    static NsPrecision precisionOf(String argument, String dtype) {
        return switch (dtype) {
            case "float32" -> NsPrecision.FLOAT32;
            case "bfloat16" -> NsPrecision.BFLOAT16;
            default -> throw new IllegalArgumentException(argument + " must be float32 or bfloat16, got '" + dtype
                    + "'");
        };
    }

    /** The {@code muon-adamw} entry's Muon side with the kernel chosen by size and same-shape batching on. */
    static MuonConfig muonSide(NsPrecision precision) {
        return MuonConfig.defaults().withLr(0.02).withNsPrecision(precision)
                .withNsAlgorithm(NsAlgorithm.AUTO).withBatchSameShape(true);
    }
}
