package dev.muon.bench;

import dev.muon.orthogonalize.NsPrecision;

/** The Newton–Schulz dtype the benchmarks take by name: float32 or bfloat16, and no other taken for either. */
final class NsDtype {
    private NsDtype() {
    }

    /**
     * @param argument how the caller names the setting in its refusal
     * @param dtype    {@code float32} or {@code bfloat16}
     * @return the precision
     * @throws IllegalArgumentException naming {@code argument} for any other dtype
     */
    static NsPrecision precisionOf(String argument, String dtype) {
        return switch (dtype) {
            case "float32" -> NsPrecision.FLOAT32;
            case "bfloat16" -> NsPrecision.BFLOAT16;
            default -> throw new IllegalArgumentException(argument + " must be float32 or bfloat16, got '" + dtype
                    + "'");
        };
    }
}
