package dev.muon;

import dev.muon.internal.FusedUpdateKernels;
import dev.muon.orthogonalize.NativeKernels;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Muon's momentum and update stages for float32 parameters on the CPU, each one pass over memory on muon-core's
 * native kernels ({@link NativeUpdateKernels}) instead of libtorch's three ({@code lerp_}, {@code lerp_out}, the cast
 * to the update dtype) and two ({@code mul_}, {@code add_}, which first copies a bfloat16 {@code O} to float32).
 * They compute every value with libtorch's operations and roundings, so a step gives the same bits with them as
 * without (NativeFusedUpdateKernelsTest); what they save is memory traffic, which is what these passes cost.
 *
 * <p>Chosen by {@link FusedKernelSelection} for CPU float32 parameters where the native kernels run (and ATen's
 * vectorised kernels, see {@link #ifAvailable()}). A tall parameter's {@code O}, the transposed view of the
 * iteration's wide result, is read block by block; a call on anything else (another dtype, another non-contiguous
 * view, overlapping tensors) is declined and runs on libtorch's ops, as the {@link FusedUpdateKernels} contract allows.
 */
final class NativeFusedUpdateKernels implements FusedUpdateKernels {
    private final NativeKernels.Variant variant;

    /** @param variant the native kernels' variant this process runs ({@link NativeKernels#variant()}) */
    NativeFusedUpdateKernels(NativeKernels.Variant variant) {
        this.variant = variant;
    }

    /**
     * The stages where the native kernels run in this process and ATen runs its vectorised kernels, whose bits they
     * reproduce; else null. ATen's scalar kernels ({@code ATEN_CPU_CAPABILITY=default}) round {@code a·b + c}
     * twice where the vectorised ones form an fma, so there the stages would change the bits, and libtorch's ops
     * keep them.
     */
    static NativeFusedUpdateKernels ifAvailable() {
        return atenVectorized() ? NativeKernels.variant().map(NativeFusedUpdateKernels::new).orElse(null) : null;
    }

    /** Whether ATen runs its vectorised CPU kernels (AVX2 or AVX-512), not its scalar ones. */
    static boolean atenVectorized() {
        return !"DEFAULT".equals(torch.get_cpu_capability().getString());
    }

    /** Whether these stages take a parameter of this dtype and device with updates of {@code updateType}. */
    static boolean serves(Tensor matrix, ScalarType updateType) {
        return matrix.is_cpu() && isFloat(matrix) && (updateType.value == ScalarType.Float.value
                || updateType.value == ScalarType.BFloat16.value);
    }

    @Override
    public boolean momentumInto(Tensor out, Tensor buffer, Tensor grad, double momentum, boolean nesterov) {
        long n = buffer.numel();
        if (!plainFloat(buffer, n) || !plainFloat(grad, n) || !plainUpdate(out, n)) {
            return false;
        }
        if (n == 0) {
            return true; // nothing to write (and an empty tensor may have no data pointer)
        }
        if (overlaps(out, buffer) || overlaps(out, grad) || overlaps(buffer, grad)) {
            return false;
        }
        NativeUpdateKernels.momentum(code(), address(buffer), address(grad), address(out), !isFloat(out), n,
                momentum, nesterov, torch.get_num_threads());
        return true;
    }

    @Override
    public boolean updateParameter(Tensor param, Tensor update, double decay, double alpha) {
        long n = param.numel();
        // A tall parameter's O is the transposed view of the wide result: served as such, read block by block.
        boolean transposed = param.dim() == 2 && isTransposedMatrix(update) && update.size(0) == param.size(0)
                && update.size(1) == param.size(1);
        if (!plainFloat(param, n) || !(transposed ? updateType(update) && update.numel() == n
                : plainUpdate(update, n))) {
            return false;
        }
        if (n == 0) {
            return true;
        }
        if (overlaps(param, update)) {
            return false;
        }
        long rows = transposed ? update.size(0) : 1;
        NativeUpdateKernels.update(code(), address(param), address(update), !isFloat(update), transposed, rows,
                n / rows, decay, alpha, torch.get_num_threads());
        return true;
    }

    /** A CPU matrix that is not contiguous but whose transpose is: the transposed view of a contiguous matrix. */
    private static boolean isTransposedMatrix(Tensor t) {
        return t.dim() == 2 && t.is_cpu() && !t.is_contiguous() && t.mT().is_contiguous();
    }

    private int code() {
        // MUON_VARIANT_* in muon_kernels.h.
        return variant == NativeKernels.Variant.AVX512 ? 0 : 1;
    }

    private static boolean isFloat(Tensor t) {
        return t.scalar_type().value == ScalarType.Float.value;
    }

    /** A contiguous CPU float32 tensor of n entries. */
    private static boolean plainFloat(Tensor t, long n) {
        return isFloat(t) && plain(t, n);
    }

    /** A contiguous CPU float32 or bfloat16 tensor of n entries. */
    private static boolean plainUpdate(Tensor t, long n) {
        return updateType(t) && plain(t, n);
    }

    private static boolean updateType(Tensor t) {
        return isFloat(t) || t.scalar_type().value == ScalarType.BFloat16.value;
    }

    private static boolean plain(Tensor t, long n) {
        return t.is_cpu() && t.numel() == n && t.is_contiguous();
    }

    private static long address(Tensor t) {
        return t.data_ptr().address();
    }

    private static boolean overlaps(Tensor a, Tensor b) {
        long aStart = address(a);
        long bStart = address(b);
        return aStart < bStart + b.nbytes() && bStart < aStart + a.nbytes();
    }
}
