package dev.muon.orthogonalize;

import org.bytedeco.pytorch.Tensor;

/** The input contract shared by the orthogonalizers of this package. */
final class MatrixInput {
    private MatrixInput() {
    }

    static void check(Tensor update) {
        if (update == null || !update.defined()) {
            throw new IllegalArgumentException("update must be a defined tensor");
        }
        if (update.is_sparse()) {
            throw new UnsupportedOperationException("update must be dense, got a sparse tensor");
        }
        if (update.is_complex()) {
            throw new UnsupportedOperationException("update must be real, got dtype " + update.scalar_type());
        }
        if (!update.is_floating_point()) {
            throw new IllegalArgumentException("update must be floating point, got dtype " + update.scalar_type());
        }
        long dim = update.dim();
        if (dim != 2 && dim != 3) {
            throw new IllegalArgumentException("update must be 2-D or a 3-D batch of matrices, got shape "
                    + java.util.Arrays.toString(update.shape()));
        }
    }
}
