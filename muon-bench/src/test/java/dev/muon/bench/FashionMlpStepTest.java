package dev.muon.bench;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@code MuonStepBenchmark}'s {@code fashion-mlp} set is the main job's split: only {@code fc1} and {@code fc2} on
 * Muon (one float32 momentum buffer each), the head and the biases on AdamW, with AOL as with the plain iteration.
 */
class FashionMlpStepTest {
    @ParameterizedTest
    @ValueSource(strings = {"plain", "aol"})
    void fashionMlp_putsTheTwoHiddenMatricesOnMuon(String variant) {
        MuonStepBenchmark bench = new MuonStepBenchmark();
        bench.model = MuonStepBenchmark.FASHION_MLP;
        bench.optimizer = "muon-adamw";
        bench.nsPrecision = "float32";
        bench.nsAlgorithm = "AUTO";
        bench.batching = "off";
        bench.variant = variant;
        bench.updateStages = "native";
        bench.setUp();
        try {
            bench.step();
            assertEquals((256L * 784 + 256L * 256) * Float.BYTES, bench.muonStateBytes(),
                    "the Muon side's state: fc1's and fc2's momentum buffers alone");
        } finally {
            bench.tearDown();
        }
    }
}
