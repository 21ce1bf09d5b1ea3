package dev.muon.cuda;

import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Arrays;

/**
 * The preconditions of each kernel, checked on the host before any launch: a kernel that got a wrong shape,
 * dtype, layout or device would read or write out of bounds instead of failing. Every message names the
 * argument, the rule and the value.
 */
final class LaunchChecks {
    /** gridDim.z, which carries the batch of the symmetric and transposing kernels. */
    static final long MAX_BATCH = 65_535;

    private LaunchChecks() {
    }

    /**
     * Checks {@code c = alpha p pᵀ + beta s + diag I} ({@code muon_sym_gemm_bf16*}).
     *
     * @param p      the factor, {@code [batch,] m × k} bfloat16
     * @param s      the added symmetric matrix, {@code [batch,] m × m} bfloat16, or null
     * @param c      the result, {@code [batch,] m × m} bfloat16, overlapping neither {@code p} nor {@code s}
     * @param device the CUDA device index of the launch
     * @throws IllegalArgumentException if a precondition fails
     */
    static void symmetric(Operand p, Operand s, Operand c, int device) {
        onDevice(p, device);
        matrixOrBatch(p);
        dtype(p, ScalarType.BFloat16);
        long m = p.size(-2);
        long k = p.size(-1);
        multipleOf8(p, "rows", m);
        multipleOf8(p, "cols", k);
        if (m > TriangleTiles.MAX_M) {
            throw new IllegalArgumentException(p.name() + " must have at most " + TriangleTiles.MAX_M
                    + " rows, got " + m);
        }
        if (k > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(p.name() + " must have at most " + Integer.MAX_VALUE
                    + " columns, got " + k);
        }
        batch(p);
        long[] gram = p.shape().length == 3 ? new long[]{p.size(0), m, m} : new long[]{m, m};
        onDevice(c, device);
        shape(c, gram);
        dtype(c, ScalarType.BFloat16);
        disjoint(c, p);
        if (s != null) {
            onDevice(s, device);
            shape(s, gram);
            dtype(s, ScalarType.BFloat16);
            disjoint(c, s);
        }
    }

    /**
     * Checks {@code x = g / max(safety ‖g‖_F, eps)} with the tall transpose folded in
     * ({@code muon_sumsq_*}, {@code muon_scale_cast*}).
     *
     * @param g        the input, {@code [batch,] rows × cols}, float32 or bfloat16
     * @param x        the result, bfloat16, {@code [batch,] min × max} (transposed when {@code rows > cols})
     * @param partials float32 scratch for {@code batch · parts} partial sums
     * @param parts    partial sums per matrix
     * @param device   the CUDA device index of the launch
     * @throws IllegalArgumentException if a precondition fails
     */
    static void normalize(Operand g, Operand x, Operand partials, int parts, int device) {
        onDevice(g, device);
        matrixOrBatch(g);
        if (g.dtype() != ScalarType.Float.value && g.dtype() != ScalarType.BFloat16.value) {
            throw new IllegalArgumentException(g.name() + " must be Float or BFloat16, got " + g.dtypeName());
        }
        long rows = g.size(-2);
        long cols = g.size(-1);
        if (rows > Integer.MAX_VALUE || cols > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(g.name() + " must have at most " + Integer.MAX_VALUE
                    + " rows and columns, got " + Arrays.toString(g.shape()));
        }
        batch(g);
        long[] wide = rows > cols ? new long[]{cols, rows} : new long[]{rows, cols};
        if (g.shape().length == 3) {
            wide = new long[]{g.size(0), wide[0], wide[1]};
        }
        onDevice(x, device);
        shape(x, wide);
        dtype(x, ScalarType.BFloat16);
        disjoint(x, g);
        onDevice(partials, device);
        dtype(partials, ScalarType.Float);
        long batch = g.shape().length == 3 ? g.size(0) : 1;
        if (parts < 1) {
            throw new IllegalArgumentException("parts must be >= 1, got " + parts);
        }
        if (partials.numel() < batch * parts) {
            throw new IllegalArgumentException(partials.name() + " must hold at least batch * parts = "
                    + batch * parts + " floats, got " + partials.numel());
        }
        disjoint(partials, g);
        disjoint(partials, x);
    }

    /**
     * Checks the fused momentum step ({@code muon_momentum_f32}).
     *
     * @param buffer   the momentum buffer, float32, updated in place
     * @param grad     the gradient, float32, same shape
     * @param out      the update, bfloat16, same shape
     * @param momentum μ
     * @param device   the CUDA device index of the launch
     * @throws IllegalArgumentException if a precondition fails
     */
    static void momentum(Operand buffer, Operand grad, Operand out, double momentum, int device) {
        onDevice(buffer, device);
        dtype(buffer, ScalarType.Float);
        sameShapeOnDevice(grad, buffer, ScalarType.Float, device);
        sameShapeOnDevice(out, buffer, ScalarType.BFloat16, device);
        disjoint(out, buffer);
        disjoint(out, grad);
        disjoint(grad, buffer);
        if (!(momentum >= 0 && momentum < 1)) {
            throw new IllegalArgumentException("momentum must be in [0, 1), got " + momentum);
        }
    }

    /**
     * Checks the fused parameter update ({@code muon_param_update_f32}).
     *
     * @param param  the parameter, float32, updated in place
     * @param update the orthogonalized update, bfloat16, same shape
     * @param decay  the parameter's multiplier
     * @param alpha  the update's multiplier
     * @param device the CUDA device index of the launch
     * @throws IllegalArgumentException if a precondition fails
     */
    static void parameterUpdate(Operand param, Operand update, double decay, double alpha, int device) {
        onDevice(param, device);
        dtype(param, ScalarType.Float);
        sameShapeOnDevice(update, param, ScalarType.BFloat16, device);
        disjoint(update, param);
        finiteFloat("decay", decay);
        finiteFloat("alpha", alpha);
    }

    /** The kernel takes its scalars in float32: a value that is not finite there would write NaN or Inf. */
    private static void finiteFloat(String name, double value) {
        if (!(Math.abs(value) <= Float.MAX_VALUE)) {
            throw new IllegalArgumentException(name + " must be finite in float32, the kernel's precision, got "
                    + value);
        }
    }

    private static void onDevice(Operand t, int device) {
        if (!t.cuda()) {
            throw new IllegalArgumentException(t.name() + " must be a CUDA tensor, got a tensor off CUDA");
        }
        if (t.deviceIndex() != device) {
            throw new IllegalArgumentException(t.name() + " must be on cuda:" + device + ", got cuda:"
                    + t.deviceIndex());
        }
        if (!t.contiguous()) {
            throw new IllegalArgumentException(t.name() + " must be contiguous, got a strided view of shape "
                    + Arrays.toString(t.shape()));
        }
        if (t.address() % 16 != 0) {
            // cp.async and the vector loads and stores move 16 bytes at a time.
            throw new IllegalArgumentException(t.name() + " must start on a 16-byte boundary, got address 0x"
                    + Long.toHexString(t.address()));
        }
    }

    /**
     * An elementwise kernel's further operand: on the launch's device, of its own dtype, and of the first operand's
     * shape, checked in that order.
     */
    private static void sameShapeOnDevice(Operand t, Operand first, ScalarType expected, int device) {
        onDevice(t, device);
        dtype(t, expected);
        shape(t, first.shape());
    }

    private static void matrixOrBatch(Operand t) {
        int dim = t.shape().length;
        if (dim != 2 && dim != 3) {
            throw new IllegalArgumentException(t.name() + " must be 2-D or a 3-D batch of matrices, got shape "
                    + Arrays.toString(t.shape()));
        }
        for (long s : t.shape()) {
            if (s < 1) {
                throw new IllegalArgumentException(t.name() + " must not be empty, got shape "
                        + Arrays.toString(t.shape()));
            }
        }
    }

    private static void batch(Operand t) {
        if (t.shape().length == 3 && t.size(0) > MAX_BATCH) {
            throw new IllegalArgumentException(t.name() + " must have a batch of at most " + MAX_BATCH + ", got "
                    + t.size(0));
        }
    }

    private static void dtype(Operand t, ScalarType expected) {
        if (t.dtype() != expected.value) {
            throw new IllegalArgumentException(t.name() + " must be " + expected.name() + ", got "
                    + t.dtypeName());
        }
    }

    private static void multipleOf8(Operand t, String what, long value) {
        if (value % 8 != 0) {
            // A 16-byte row chunk of bf16 is 8 elements: rows must not end inside one.
            throw new IllegalArgumentException(t.name() + " " + what + " must be a multiple of 8, got " + value);
        }
    }

    private static void shape(Operand t, long[] expected) {
        if (!Arrays.equals(t.shape(), expected)) {
            throw new IllegalArgumentException(t.name() + " must have shape " + Arrays.toString(expected)
                    + ", got " + Arrays.toString(t.shape()));
        }
    }

    private static void disjoint(Operand a, Operand b) {
        long aEnd = a.address() + a.numel() * a.elementSize();
        long bEnd = b.address() + b.numel() * b.elementSize();
        if (a.address() < bEnd && b.address() < aEnd) {
            throw new IllegalArgumentException(a.name() + " must not overlap " + b.name()
                    + ", got overlapping memory at 0x" + Long.toHexString(Math.max(a.address(), b.address())));
        }
    }
}
