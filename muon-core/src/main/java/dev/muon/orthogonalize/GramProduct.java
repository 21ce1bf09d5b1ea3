package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * {@code out = x·xᵀ} for a row-major {@code m × k} matrix {@code x}, with both triangles of {@code out} written,
 * in about {@code (b + 1)/(2b)} of a GEMM's multiply-adds for {@code b} row blocks (0.625 at {@code m = 1024}), on
 * libtorch ops for any dtype and device; or, for bfloat16 on a CPU where muon-core's native kernels run
 * ({@link NativeKernels}: AVX512_BF16, or AVX2 with FMA), in half a GEMM's multiply-adds by their half product.
 * Every product of the form {@code S·S} with {@code S} symmetric is one of these, since {@code S·S = S·Sᵀ}.
 *
 * <p>The native kernel accumulates each entry in float32 over the whole of {@code k} and rounds it once to bfloat16,
 * as a GEMM does, and writes each value to both of its places. Its AVX-512 variant against libtorch's GEMM for the
 * same product, in one process on our 2-core Zen 4 CPU ({@code docs/benchmarks.md}): 0.63 of its time at
 * 768 × 768, 0.61 at 768 × 3072, 0.65 at 1024 × 1024, 0.58 at 1024 × 4096 and 1536 × 1536, 0.67 at 512 × 512,
 * 0.73–0.88 at 256 × 256 (the AVX2 variant is not measured yet).
 *
 * <p>Row blocks of {@value #BLOCK_ROWS} rows, each one GEMM {@code out[i, i:] = x[i]·x[i:]ᵀ} straight into a view
 * of {@code out} (libtorch writes a GEMM into a strided row slice without a copy); then the blocks left of the
 * diagonal are copied from the transposed blocks above it, and each diagonal tile from its own upper triangle.
 * The result is exactly symmetric (tested bit for bit), so the Gram iteration's rounding stays symmetric too.
 * (On the CPU in float32 and float64, OpenBLAS {@code ?syrk} does this with exactly half the work; see
 * {@link BlasKernels}.)
 *
 * <p>Buffers are made at construction for one shape, and the native kernel's packing scratch at the first call
 * with a longer {@code k} than before; later calls allocate no large tensors.
 */
final class GramProduct {
    /**
     * Rows per block (and side of the mirrored tiles). Measured at {@code m = 1024} in bfloat16 (libtorch 2.10,
     * 2 threads, one process): 256-row blocks took 4.4 ms for an {@code m × m} product plus 0.8 ms to mirror,
     * against 5.8 ms for one GEMM; 128-row blocks spent 1.9 ms on the mirror alone (many small strided copies).
     */
    static final int BLOCK_ROWS = 256;

    /**
     * The smallest {@code m} from which, on the CPU, an {@code m × m × m} self product ({@code A·Aᵀ} for a square
     * {@code A}) formed from these row blocks beats one GEMM: measured in bfloat16 through the symmetric kernel,
     * which loses at 1024², ties at 1280² and wins from 1536² (see
     * {@link NewtonSchulz#BFLOAT16_SYMMETRIC_MIN_ROWS}, which is this value).
     */
    static final int CPU_SQUARE_MIN_ROWS = 1536;

    /**
     * The largest {@code m·k} for which the native kernel forms {@code x·xᵀ}; larger products run as row blocks of
     * GEMMs. The kernel streams each 8-row tile of {@code x} past every 32-row panel, and once {@code x} outgrows
     * the cache that stream costs more than the half of the multiply-adds it saves. Native against row blocks, in
     * one process on our 2-core CPU: 11.9 against 15.3 ms at 1024 × 4096, 27.7 against 32.2 at 2048²; 31.7
     * against 30.6 at 1024 × 8192, 57.4 against 55.1 at 2048 × 4096, 15.2 against 17.3 at 512 × 16384 (all
     * {@code 2^23}); 27.2 against 25.9 at 768 × 12288, 67 against 57 at 1024 × 16384, 130 against 106 at
     * 2048 × 8192, 271 against 216 at 4096².
     */
    static final long NATIVE_MAX_ELEMENTS = 1L << 23;

    private final int rows;
    /** Scratch for mirroring the diagonal tiles of the row-blocked form. */
    private final Tensor tile;
    /** The native bfloat16 kernel's variant that forms the products up to {@link #NATIVE_MAX_ELEMENTS}, or null. */
    private final NativeKernels.Variant nativeKernel;
    /** Whether {@link #squareInto} forms {@code m × m} self products as half products rather than one GEMM. */
    private final boolean halfSquares;
    /** The native kernel's packing scratch, grown to the longest {@code k} seen; empty before the first call. */
    private final PackingScratch scratch = new PackingScratch();
    /** The full products of the row-blocked form and of {@link #squareInto}'s GEMM. */
    private final MatrixProducts products;

    /**
     * Prepares products with {@code rows × rows} results.
     *
     * @param rows                {@code m}
     * @param options             the dtype and device of the tensors
     * @param nativeKernel        the native kernel's variant that forms them (only where {@link #nativeVariantFor}
     *                            gives one, or in tests any this CPU runs), or null for libtorch's GEMMs
     * @param halfSquaresMinRows  the smallest {@code m} from which {@link #squareInto} and {@link #polynomialInto}
     *                            form {@code m × m} self products as half products rather than one GEMM ({@code 0}:
     *                            always); {@link #into} always forms half products
     * @param products            the full products: the row blocks and {@link #squareInto}'s GEMM
     */
    GramProduct(long rows, TensorOptions options, NativeKernels.Variant nativeKernel, int halfSquaresMinRows,
            MatrixProducts products) {
        this.products = products;
        this.rows = Math.toIntExact(rows);
        this.nativeKernel = nativeKernel;
        this.halfSquares = rows >= halfSquaresMinRows;
        long side = Math.min(BLOCK_ROWS, rows);
        this.tile = NativeLifetime.outliveScope(torch.empty(new long[]{side, side}, options, null));
    }

    /**
     * Whether the native half product serves tensors like {@code t}: bfloat16 on the CPU, with the kernel
     * available here.
     */
    static boolean nativeServes(Tensor t) {
        return bfloat16OnCpu(t) && NativeKernels.isAvailable();
    }

    /**
     * The native half product's variant for tensors like {@code t}: the one that runs here where
     * {@link #nativeServes} says it serves them, else null.
     */
    static NativeKernels.Variant nativeVariantFor(Tensor t) {
        return nativeServes(t) ? NativeKernels.variant().orElseThrow() : null;
    }

    /** Whether {@code t} is bfloat16 on the CPU. */
    static boolean bfloat16OnCpu(Tensor t) {
        return t.scalar_type().value == ScalarType.BFloat16.value && t.device().is_cpu();
    }

    /**
     * Writes {@code x·xᵀ} into {@code out}, both triangles.
     *
     * @param out a contiguous {@code m × m} tensor, not overlapping {@code x}
     * @param x   a contiguous {@code m × k} tensor
     */
    void into(Tensor out, Tensor x) {
        if (usesNativeFor(x.size(1))) {
            nativeInto(out, x);
            return;
        }
        Tensor xt = x.t();
        for (int r0 = 0; r0 < rows; r0 += BLOCK_ROWS) {
            int height = Math.min(BLOCK_ROWS, rows - r0);
            products.multiply(out.narrow(0, r0, height).narrow(1, r0, rows - r0), x.narrow(0, r0, height),
                    xt.narrow(1, r0, rows - r0));
        }
        for (int r0 = 0; r0 < rows; r0 += BLOCK_ROWS) {
            int height = Math.min(BLOCK_ROWS, rows - r0);
            int below = rows - r0 - height;
            if (below > 0) {
                out.narrow(0, r0 + height, below).narrow(1, r0, height)
                        .copy_(out.narrow(0, r0, height).narrow(1, r0 + height, below).t());
            }
            // A GEMM's x_i·x_iᵀ is not bitwise symmetric (measured in float64): mirror the diagonal tile too.
            Tensor diagonal = out.narrow(0, r0, height).narrow(1, r0, height);
            Tensor strictUpper = tile.narrow(0, 0, height).narrow(1, 0, height);
            torch.triu_out(strictUpper, diagonal, 1);
            diagonal.triu_(0);
            diagonal.add_(strictUpper.t());
        }
    }

    /** Whether the native kernel forms a product with a {@code k}-column operand. */
    boolean usesNativeFor(long k) {
        return nativeKernel != null && rows * k <= NATIVE_MAX_ELEMENTS;
    }

    /** Whether the native kernel forms {@code m × m} self products, so that {@link #fusedPolynomialInto} can run. */
    boolean isNative() {
        return usesNativeFor(rows);
    }

    /**
     * {@code out = s·s} for a symmetric {@code m × m} {@code s}: a half product ({@link #into}) from the
     * constructor's {@code halfSquaresMinRows}, else one GEMM, whose rounding is not exactly symmetric.
     */
    void squareInto(Tensor out, Tensor s) {
        if (halfSquares) {
            into(out, s);
        } else {
            products.multiply(out, s, s);
        }
    }

    /**
     * Writes the Newton–Schulz polynomial {@code a·I + b·s + c·s·s} of a symmetric {@code m × m} {@code s} into
     * {@code out}: in one pass of the native kernel where it forms the half squares ({@link #fusedPolynomialInto}),
     * else {@code s·s} by {@link #squareInto} into {@code scratch} and three libtorch passes.
     *
     * @param out     an {@code m × m} tensor, not overlapping {@code s}
     * @param s       an exactly symmetric {@code m × m} tensor
     * @param scratch an {@code m × m} tensor, overwritten on the libtorch path
     */
    void polynomialInto(Tensor out, Tensor s, Tensor scratch, Scalar a, Scalar b, Scalar c) {
        if (halfSquares && isNative()) {
            fusedPolynomialInto(out, s, a.toDouble(), b.toDouble(), c.toDouble());
            return;
        }
        squareInto(scratch, s);
        torch.mul_out(out, scratch, c);
        out.add_(s, b);
        out.diagonal().add_(a);
    }

    /**
     * Writes the Newton–Schulz polynomial {@code a·I + b·s + c·s·s} of an exactly symmetric {@code m × m} {@code s}
     * into {@code out} with the native kernel, in one pass: the product's half, the sum formed in float32 from the
     * unrounded product and rounded once. Only where {@link #isNative()}.
     *
     * @param out a contiguous {@code m × m} tensor, not overlapping {@code s}
     * @param s   a contiguous, exactly symmetric {@code m × m} tensor
     */
    void fusedPolynomialInto(Tensor out, Tensor s, double a, double b, double c) {
        if (nativeKernel == null) {
            throw new IllegalStateException("the fused polynomial needs the native kernel, which this product lacks");
        }
        if (!isNative()) {
            throw new IllegalStateException("the fused polynomial runs natively up to " + NATIVE_MAX_ELEMENTS
                    + " elements, and " + rows + " x " + rows + " is more");
        }
        requireNativeOperands(out, s);
        if (rows == 0) {
            return; // an empty tensor has no data pointer
        }
        NativeKernels.bfloat16Polynomial(nativeKernel.code, s.data_ptr().address(), 1, rows,
                out.data_ptr().address(), scratchFor(rows), torch.get_num_threads(), (float) a, (float) b, (float) c);
    }

    private void nativeInto(Tensor out, Tensor x) {
        requireNativeOperands(out, x);
        int k = Math.toIntExact(x.size(1));
        if (rows == 0) {
            return; // an empty tensor has no data pointer
        }
        if (k == 0) {
            out.zero_();
            return;
        }
        NativeKernels.bfloat16SelfProduct(nativeKernel.code, x.data_ptr().address(), 1, rows, k,
                out.data_ptr().address(), scratchFor(k), torch.get_num_threads());
    }

    private void requireNativeOperands(Tensor out, Tensor x) {
        // The kernel reads and writes raw memory: a view or another dtype here would be a bug in the caller.
        if (!x.is_contiguous() || !out.is_contiguous() || x.dim() != 2 || out.dim() != 2 || x.size(0) != rows
                || out.size(0) != rows || out.size(1) != rows || !bfloat16OnCpu(x) || !bfloat16OnCpu(out)) {
            throw new IllegalStateException("the native half product needs contiguous 2-D bfloat16 CPU tensors of "
                    + rows + " rows, got x " + x.size(0) + "x" + x.size(-1) + " (contiguous: " + x.is_contiguous()
                    + ") and out " + out.size(0) + "x" + out.size(-1) + " (contiguous: " + out.is_contiguous() + ")");
        }
    }

    /** The packing scratch's address for a {@code k}-column operand, grown to the longest {@code k} so far. */
    private long scratchFor(int k) {
        return scratch.address(NativeKernels.bfloat16PackBytes(nativeKernel.code, rows, k));
    }
}
