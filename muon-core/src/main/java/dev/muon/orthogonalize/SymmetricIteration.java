package dev.muon.orthogonalize;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The symmetric kernel on libtorch ops: the plain iteration with its two products of a symmetric matrix formed as
 * row blocks of GEMMs ({@link GramProduct}), for the CPU where OpenBLAS does not serve the dtype (bfloat16); or,
 * where muon-core's native kernels run ({@link NativeKernels}), formed by their half product, with {@code B} in the
 * same pass as {@code A²} ({@link GramProduct#fusedPolynomialInto}), which wins from 512² (see
 * {@link NewtonSchulz#autoKernel}); or, where their AVX-512 variant runs and {@code m} is at most
 * {@link NewtonSchulz#BFLOAT16_ONE_PASS_MAX_ROWS}, each whole step in one native pass
 * ({@link NativeKernels#bfloat16SymmetricStep}: both half products and {@code B·X} on the same register tiles, no
 * mirror, no libtorch GEMM).
 *
 * <p>Each step: {@code A = X·Xᵀ} and {@code A² = A·Aᵀ} by {@link GramProduct}, then {@code B = c·A² + b·A + a·I}
 * and {@code X' = B·X} as one GEMM. With {@code b} row blocks the two Gram products cost {@code (b + 1)/(2b)} of a
 * GEMM each, so a square step costs about {@code 2.2} GEMMs' multiply-adds at {@code m = 2048} against 3. The
 * blocks are smaller GEMMs, and the mirror copies and the two elementwise passes over {@code m × m} are extra;
 * in bfloat16 on our 2-core machine that lost at 1024², tied at 1280² and won from 1536² (measured with 256-row
 * blocks, against the plain kernel: 242–249 against 266–273 ms at 1536², 559 against 645 ms at 2048², 1 781
 * against 2 316 ms at 3072²), which is where {@link GramProduct#CPU_SQUARE_MIN_ROWS} puts
 * {@link NsAlgorithm#AUTO}'s switch.
 *
 * <p>It computes the same polynomial as the plain kernel, {@code a·I + b·A + c·A²}, with different rounding
 * (the plain kernel forms {@code A·(c·A + b·I)}); in float64 the two agree to 1e-12 and in bfloat16 this one
 * passes the golden README's tolerance on every golden case (tested). The one-pass step rounds {@code A},
 * {@code B} and {@code X'} exactly as the half products do (each once, from a float32 sum); only {@code B·X}'s
 * summation order differs from libtorch's GEMM.
 */
final class SymmetricIteration {
    /** {@link NewtonSchulz#BFLOAT16_ONE_PASS_MAX_ROWS}, which documents the measurement behind it. */
    static final int ONE_PASS_MAX_ROWS = 1408;

    /**
     * Whether the bfloat16 symmetric kernel runs each step as one native pass for an {@code m × n} matrix (after the
     * tall transpose) with the native kernels' {@code variant} (null: none): the AVX-512 variant, up to
     * {@value #ONE_PASS_MAX_ROWS} rows, and {@code m·n} within the half product's bound
     * ({@code GramProduct.NATIVE_MAX_ELEMENTS}: its tiles stream {@code X} past every panel, which outgrows the
     * cache beyond it; {@code AUTO} never gets there, an explicit {@code SYMMETRIC} on a very wide matrix may).
     */
    static boolean onePassServes(NativeKernels.Variant variant, long m, long n) {
        return variant == NativeKernels.Variant.AVX512 && m <= ONE_PASS_MAX_ROWS
                && m * n <= GramProduct.NATIVE_MAX_ELEMENTS;
    }

    private final Workspace ws;
    private final GramProduct gram;
    private final MatrixProducts products;
    /** Whether each step runs as one native pass ({@link NativeKernels#bfloat16SymmetricStep}). */
    private final boolean onePass;
    /** The one-pass step's scratch; empty until its first call. */
    private final PackingScratch scratch = new PackingScratch();

    /**
     * @param ws           the buffers, {@code x} holding the normalised input at each call
     * @param nativeKernel the native bfloat16 kernel's variant on which the products run (only where
     *                     {@link GramProduct#nativeVariantFor} gives one, or in tests any this CPU runs), the
     *                     polynomial fused into its second one; null: row blocks of GEMMs
     * @param onePass      whether each step runs as one native pass ({@link NativeKernels#bfloat16SymmetricStep}):
     *                     only with the {@link NativeKernels.Variant#AVX512} variant, for a 2-D bfloat16 CPU
     *                     workspace (where {@link #onePassServes} says so, or in tests)
     * @param products     the full products ({@code B·X} and the row blocks)
     * @throws IllegalArgumentException if {@code onePass} is asked for without the AVX-512 variant or for another
     *                                  workspace
     */
    SymmetricIteration(Workspace ws, NativeKernels.Variant nativeKernel, boolean onePass, MatrixProducts products) {
        this.ws = ws;
        this.products = products;
        if (onePass && (nativeKernel != NativeKernels.Variant.AVX512 || ws.x.dim() != 2
                || !GramProduct.bfloat16OnCpu(ws.x))) {
            throw new IllegalArgumentException("the one-pass bfloat16 step needs the avx512 native kernels and a 2-D "
                    + "bfloat16 CPU workspace, got kernels " + nativeKernel + " and a " + ws.x.dim() + "-D "
                    + ws.x.scalar_type() + " workspace");
        }
        this.onePass = onePass;
        // Half products at any size: asking for this kernel is asking for them.
        gram = new GramProduct(ws.x.size(0), ws.x.options(), nativeKernel, 0, products);
    }

    /** Whether each step runs as one native pass. */
    boolean isOnePass() {
        return onePass;
    }

    /**
     * Runs the iteration on the workspace's {@code x}, which holds the normalised wide input on entry, and returns
     * the buffer holding the result ({@code ws.x} or {@code ws.y}). Uses {@code ws.a}, {@code ws.t} and
     * {@code ws.b}.
     */
    Tensor iterate(int steps, Scalar[] linear, Scalar[] cubic, Scalar[] quintic) {
        return iterate(steps, linear, cubic, quintic, null);
    }

    /**
     * {@link #iterate(int, Scalar[], Scalar[], Scalar[])} with a preconditioning of the first Gram matrix and the
     * input, called as {@code precondition.accept(A, X)} right after the first {@code A = X·Xᵀ} (AOL). The one-pass
     * step fuses that product with the polynomial, so with a preconditioning the first step runs on the half
     * products and the rest one pass each.
     */
    Tensor iterate(int steps, Scalar[] linear, Scalar[] cubic, Scalar[] quintic,
                   java.util.function.BiConsumer<Tensor, Tensor> precondition) {
        if (onePass && precondition == null) {
            return onePassIterate(ws.x, ws.y, 0, steps, linear, cubic, quintic);
        }
        Tensor x = ws.x;
        Tensor next = ws.y;
        for (int k = 0; k < steps; k++) {
            if (onePass && k == 1) {
                return onePassIterate(x, next, 1, steps, linear, cubic, quintic);
            }
            gram.into(ws.a, x);
            if (k == 0 && precondition != null) {
                precondition.accept(ws.a, x);
            }
            gram.polynomialInto(ws.b, ws.a, ws.t, linear[k], cubic[k], quintic[k]);
            products.multiply(next, ws.b, x);
            Tensor done = x;
            x = next;
            next = done;
        }
        return x;
    }

    /** Steps {@code first … steps − 1}, one native pass each, from {@code x} (the other wide buffer {@code next}). */
    private Tensor onePassIterate(Tensor from, Tensor other, int first, int steps, Scalar[] linear, Scalar[] cubic,
                                  Scalar[] quintic) {
        Tensor x = from;
        Tensor next = other;
        int m = Math.toIntExact(x.size(0));
        int n = Math.toIntExact(x.size(1));
        if ((long) m * n == 0) {
            return x; // nothing to multiply, and an empty tensor has no data pointer
        }
        long scratchAddress = scratch.address(NativeKernels.bfloat16SymmetricStepBytes(m, n));
        int threads = torch.get_num_threads();
        for (int k = first; k < steps; k++) {
            // The kernel reads and writes raw memory; the workspace is contiguous by construction.
            NativeKernels.bfloat16SymmetricStep(x.data_ptr().address(), m, n, ws.a.data_ptr().address(),
                    ws.b.data_ptr().address(), next.data_ptr().address(), scratchAddress, threads,
                    (float) linear[k].toDouble(), (float) cubic[k].toDouble(), (float) quintic[k].toDouble());
            Tensor done = x;
            x = next;
            next = done;
        }
        return x;
    }
}
