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
 * on this class of CPU a fresh 16 MB allocation costs ~100x the in-place op on it (page faults). Buffers only:
 * the kernels that run over them ({@link ShapeKernels}) sit above it.
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
        a = NativeLifetime.outliveScope(torch.empty(gram, options, null));
        t = NativeLifetime.outliveScope(torch.empty(gram, options, null));
        b = NativeLifetime.outliveScope(torch.empty(gram, options, null));
    }

    private Tensor[] gramSquares;

    /**
     * The three more {@code m × m} buffers the Gram kernel needs besides {@code a}, {@code t} and {@code b}, in
     * either of its forms; created on first use.
     */
    Tensor[] gramSquares() {
        if (gramSquares == null) {
            long m = x.size(0);
            gramSquares = new Tensor[3];
            for (int i = 0; i < gramSquares.length; i++) {
                gramSquares[i] = NativeLifetime.outliveScope(torch.empty(new long[]{m, m}, x.options(), null));
            }
        }
        return gramSquares;
    }

    /** Identifies a workspace: batch (0 for a plain matrix), the wide shape, the dtype and the device. */
    record Key(long batch, long m, long n, byte dtype, byte deviceType, byte deviceIndex) {
    }
}
