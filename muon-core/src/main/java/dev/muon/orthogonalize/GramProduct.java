package dev.muon.orthogonalize;

import dev.muon.internal.NativeLifetime;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * {@code out = x·xᵀ} for a row-major {@code m × k} matrix {@code x}, with both triangles of {@code out} written,
 * in about {@code (b + 1)/(2b)} of a GEMM's multiply-adds for {@code b} row blocks (0.625 at {@code m = 1024}), on
 * libtorch ops for any dtype and device. Every product of the form {@code S·S} with {@code S} symmetric is one of
 * these, since {@code S·S = S·Sᵀ}.
 *
 * <p>Row blocks of {@value #BLOCK_ROWS} rows, each one GEMM {@code out[i, i:] = x[i]·x[i:]ᵀ} straight into a view
 * of {@code out} (libtorch writes a GEMM into a strided row slice without a copy); then the blocks left of the
 * diagonal are copied from the transposed blocks above it, and each diagonal tile from its own upper triangle.
 * The result is exactly symmetric (tested bit for bit), so the Gram iteration's rounding stays symmetric too.
 * (On the CPU in float32 and float64, OpenBLAS {@code ?syrk} does this with exactly half the work; see
 * {@link BlasKernels}.)
 *
 * <p>Buffers are made at construction for one shape; calls allocate no large tensors.
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

    private final int rows;
    /** Scratch for mirroring the diagonal tiles. */
    private final Tensor tile;

    /**
     * Prepares products with {@code rows × rows} results.
     *
     * @param rows    {@code m}
     * @param options the dtype and device of the tensors
     */
    GramProduct(long rows, TensorOptions options) {
        this.rows = Math.toIntExact(rows);
        long side = Math.min(BLOCK_ROWS, rows);
        this.tile = NativeLifetime.outliveScope(torch.empty(new long[]{side, side}, options, null));
    }

    /**
     * Writes {@code x·xᵀ} into {@code out}, both triangles.
     *
     * @param out a contiguous {@code m × m} tensor, not overlapping {@code x}
     * @param x   a contiguous {@code m × k} tensor
     */
    void into(Tensor out, Tensor x) {
        Tensor xt = x.t();
        for (int r0 = 0; r0 < rows; r0 += BLOCK_ROWS) {
            int height = Math.min(BLOCK_ROWS, rows - r0);
            torch.mm_out(out.narrow(0, r0, height).narrow(1, r0, rows - r0), x.narrow(0, r0, height),
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
}
