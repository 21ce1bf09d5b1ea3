package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The five buffers one Newton–Schulz run needs for a wide {@code [batch,] m × n} input ({@code m <= n}): the
 * iterate {@code X} and its successor (ping-pong, because a GEMM cannot write over an operand), the Gram
 * matrix {@code A}, {@code T = c·A + b·I} and the polynomial {@code B = a·I + A·T}. Created at the first call for a shape and reused afterwards:
 * on this class of CPU a fresh 16 MB allocation costs ~100x the in-place op on it (page faults).
 */
final class Workspace {
    final Tensor x;
    final Tensor y;
    final Tensor a;
    final Tensor t;
    final Tensor b;

    Workspace(long batch, long m, long n, ScalarType dtype, Device device) {
        TensorOptions options = new TensorOptions(dtype).device(new DeviceOptional(device));
        long[] wide = batch > 0 ? new long[]{batch, m, n} : new long[]{m, n};
        long[] gram = batch > 0 ? new long[]{batch, m, m} : new long[]{m, m};
        x = NativeLifetime.outliveScope(torch.empty(wide, options, null));
        y = NativeLifetime.outliveScope(torch.empty(wide, options, null));
        // Zeroed, not empty: the symmetric kernel only ever writes A's upper triangle and relies on a zero lower.
        a = NativeLifetime.outliveScope(torch.zeros(gram, options));
        t = NativeLifetime.outliveScope(torch.empty(gram, options, null));
        b = NativeLifetime.outliveScope(torch.empty(gram, options, null));
    }

    private GramIteration gram;

    /**
     * The Gram-iteration buffers for this shape, created on first use.
     *
     * @param blas    whether the Gram products may use OpenBLAS {@code ?syrk} (fixed for a workspace: its dtype
     *                and device are part of its key)
     * @param float64 whether the iteration runs in float64
     */
    GramIteration gram(boolean blas, boolean float64) {
        if (gram == null) {
            gram = new GramIteration(this, blas, float64);
        }
        return gram;
    }

    /** Identifies a workspace: batch (0 for a plain matrix), the wide shape, the dtype and the device. */
    record Key(long batch, long m, long n, byte dtype, byte deviceType, byte deviceIndex) {
    }
}
