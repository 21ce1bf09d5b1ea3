package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.util.Arrays;

/**
 * How Muon sees one parameter as a matrix, or as a batch of matrices: a 2-D weight as itself, a 4-D conv filter
 * {@code [out, in, kh, kw]} as {@code [out, in·kh·kw]}, a 3-D stack {@code [n, rows, cols]} as a batch.
 *
 * @param shape     the parameter's own shape
 * @param batch     the number of stacked matrices, 0 for a single matrix
 * @param rows      the rows of each matrix
 * @param cols      the columns of each matrix
 */
record MatrixLayout(long[] shape, long batch, long rows, long cols) {

    /**
     * Classifies a parameter, or explains why Muon cannot take it.
     *
     * @param param  the parameter
     * @param config its group's configuration
     * @param label  how to name the parameter in a message
     * @return the layout
     * @throws IllegalArgumentException if the dtype or the shape is not accepted under {@code config}
     */
    static MatrixLayout of(Tensor param, MuonConfig config, String label) {
        long[] shape = param.shape();
        if (param.is_complex()) {
            throw new IllegalArgumentException("Muon does not support complex parameters; " + label
                    + " has dtype " + param.scalar_type());
        }
        if (!param.is_floating_point()) {
            throw new IllegalArgumentException("Muon only supports floating-point parameters; " + label
                    + " has dtype " + param.scalar_type());
        }
        AssignmentRule.Matrix matrix = AssignmentRule.matrixOf(shape, config, label);
        if (shape.length == 4) {
            requireContiguous(param, label, Arrays.toString(shape));
        }
        return new MatrixLayout(shape, matrix.batch(), matrix.rows(), matrix.cols());
    }

    private static void requireContiguous(Tensor param, String label, String shapeText) {
        if (!param.is_contiguous()) {
            throw new IllegalArgumentException("a flattened conv filter must be contiguous; " + label
                    + " of shape " + shapeText + " is not");
        }
    }

    /** The matrix view of {@code t}, which has this layout's shape: no copy for a 2-D or 3-D tensor. */
    Tensor matrixView(Tensor t) {
        if (shape.length == 4) {
            // reshape, not view: a gradient may be non-contiguous; the parameter itself was checked contiguous.
            return t.reshape(rows, cols);
        }
        return t;
    }
}
