package dev.muon.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** StepFaults' arguments: what it takes, and each refusal naming the argument, its rule and the value. */
class StepFaultsTest {
    @Test
    void takesEveryOptimizer() {
        for (String name : StepFaults.OPTIMIZERS) {
            assertDoesNotThrow(() -> StepFaults.checkOptimizer(name), name);
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "muon-adamw float32 x | arguments must be OPTIMIZER and optionally float32 or bfloat16, got 3 arguments",
            "sgd | OPTIMIZER must be one of [muon-adamw, muon-only, adamw-rest, adamw, adamw-side], got 'sgd'",
            "muon-adamw float16 | the dtype must be float32 or bfloat16, got 'float16'",
    })
    void refusesBadArguments(String args, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StepFaults.main(args.split(" ")));
        assertEquals(message, e.getMessage());
    }
}
