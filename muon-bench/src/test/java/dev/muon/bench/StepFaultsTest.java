package dev.muon.bench;

import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** StepFaults' arguments: what it takes, and each refusal naming the argument, its rule and the value. */
class StepFaultsTest {
    @Test
    void takesEveryOptimizerAndBothDtypes() {
        for (String name : StepFaults.OPTIMIZERS) {
            StepFaults.checkOptimizer(name);
        }
        assertEquals(NsPrecision.FLOAT32, StepFaults.precisionOf("float32"));
        assertEquals(NsPrecision.BFLOAT16, StepFaults.precisionOf("bfloat16"));
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
