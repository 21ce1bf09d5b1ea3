package dev.muon.bench;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The JMH benchmarks refuse a setting they do not know before building anything, naming it, its rule and the value,
 * where a misspelt one could otherwise be measured as another (an unknown optimizer as {@code muon}, a dtype as
 * float32).
 */
class BenchmarkSettingsTest {
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "optimizer   | muonn   | optimizer must be one of [adamw, muon, muon-adamw, adamw-side, torch-reference], "
                    + "got 'muonn'",
            "nsPrecision | float16 | nsPrecision must be float32 or bfloat16, got 'float16'",
            "batching    | yes     | batching must be on or off, got yes",
    })
    void stepBenchmark_refusesAnUnknownSetting(String field, String value, String message) {
        MuonStepBenchmark bench = new MuonStepBenchmark();
        bench.model = "small-24x256";
        bench.optimizer = "muon";
        bench.nsPrecision = "float32";
        bench.nsAlgorithm = "AUTO";
        bench.batching = "on";
        bench.variant = "plain";
        bench.updateStages = "native";
        switch (field) {
            case "optimizer" -> bench.optimizer = value;
            case "nsPrecision" -> bench.nsPrecision = value;
            default -> bench.batching = value;
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bench::setUp);
        assertEquals(message, e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "dtype   | fp32    | dtype must be float32 or bfloat16, got 'fp32'",
            "variant | ns-fast | variant must be one of ns-auto, ns-gemm, ns-symmetric, ns-gram, gemm, naive or "
                    + "torch-reference, got 'ns-fast'",
    })
    void newtonSchulzBenchmark_refusesAnUnknownSetting(String field, String value, String message) {
        NewtonSchulzBenchmark bench = new NewtonSchulzBenchmark();
        bench.shape = "48x160";
        bench.dtype = field.equals("dtype") ? value : "float32";
        bench.variant = field.equals("variant") ? value : "ns-auto";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bench::setUp);
        assertEquals(message, e.getMessage());
    }
}
