package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The dtype in which the Newton–Schulz iterations run, chosen independently of the parameters' and the momentum's
 * dtype. The input's Frobenius norm is always accumulated in float32 or wider (float64 when the input or this
 * precision is float64).
 */
public enum NsPrecision {
    /** Float32 GEMMs: the default. Matches float64 to about 1e-6 relative and runs on every CPU. */
    FLOAT32(ScalarType.Float),
    /**
     * Bfloat16 GEMMs with float32 accumulation, as PyTorch's Muon does. About 2x faster where the CPU has
     * bf16 matrix instructions (AVX512_BF16, AMX) and on GPUs; 5e-2 relative error against the exact iteration.
     */
    BFLOAT16(ScalarType.BFloat16),
    /** Float64, for reference runs and tests; slow. */
    FLOAT64(ScalarType.Double);

    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private final ScalarType scalarType;

    NsPrecision(ScalarType scalarType) {
        this.scalarType = scalarType;
    }

    /**
     * The libtorch dtype of the iteration.
     *
     * @return the scalar type
     */
    public ScalarType scalarType() {
        return scalarType;
    }
}
