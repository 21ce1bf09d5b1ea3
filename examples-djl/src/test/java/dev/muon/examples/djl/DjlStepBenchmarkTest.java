package dev.muon.examples.djl;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The DJL step benchmark refuses a setting it does not know before the engine starts, naming it, its rule and the
 * value: an unknown optimizer would otherwise be measured as muon-djl's {@code MuonAdamW}.
 */
class DjlStepBenchmarkTest {
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "muon       | gpt2-block | optimizer must be one of [muon-adamw, muon-adamw-aol, muon-adamw-ndarray, "
                    + "adam], got 'muon'",
            "muon-adamw | gpt2       | model must be gpt2-block or mnist-mlp, got 'gpt2'",
    })
    void refusesAnUnknownSetting(String optimizer, String model, String message) {
        DjlStepBenchmark bench = new DjlStepBenchmark();
        bench.optimizer = optimizer;
        bench.model = model;
        bench.threads = 1;
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bench::setUp);
        assertEquals(message, e.getMessage());
    }
}
