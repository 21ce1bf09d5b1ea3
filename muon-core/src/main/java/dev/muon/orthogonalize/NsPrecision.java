package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The dtype in which the Newton–Schulz iterations run, chosen independently of the parameters' and the momentum's
 * dtype. The input's Frobenius norm is always accumulated in float32 or wider (float64 when the input or this
 * precision is float64).
 *
 * <p>The constants hold no libtorch type, so that this enum loads without the bindings on the class path (muon-djl
 * uses it); {@link #scalarType()} maps to libtorch's dtype only when called.
 */
public enum NsPrecision {
    /** Float32 GEMMs: the default. Matches float64 to about 1e-6 relative and runs on every CPU. */
    FLOAT32,
    /**
     * Bfloat16 GEMMs with float32 accumulation, as PyTorch's Muon does. About 2x faster where the CPU has
     * bf16 matrix instructions (AVX512_BF16, AMX) and on GPUs; 5e-2 relative error against the exact iteration.
     */
    BFLOAT16,
    /** Float64, for reference runs and tests; slow. */
    FLOAT64;

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * The libtorch dtype of the iteration.
     *
     * @return the scalar type
     */
    public ScalarType scalarType() {
        return switch (this) {
            case FLOAT32 -> ScalarType.Float;
            case BFLOAT16 -> ScalarType.BFloat16;
            case FLOAT64 -> ScalarType.Double;
        };
    }
}
