package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.golden.GoldenCase;

import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One of muon-djl's Newton–Schulz iterations against an {@code ns_*} golden case: DJL's products
 * ({@link NsIteration}) and muon-core's native kernels ({@link NsKernels}) are held to the same checks.
 */
final class OrthogonalizerGolden {
    private OrthogonalizerGolden() {
    }

    /**
     * Orthogonalizes the case's input in {@code dtype} and checks that the output keeps the dtype and the shape, is
     * within {@code tolerance} (relative) of the case's expected output, and that the input is never written.
     *
     * @param c              the golden case
     * @param dtype          the dtype of the input
     * @param tolerance      the relative tolerance of the golden README for that dtype
     * @param orthogonalizer the iteration under test
     */
    static void assertMatches(GoldenCase c, DataType dtype, double tolerance, UnaryOperator<NDArray> orthogonalizer) {
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray input = manager.create(c.tensor("input", null, 0).data(), new Shape(c.shape())).toType(dtype,
                    false);
            double[] before = Measures.values(input);
            NDArray out = orthogonalizer.apply(input);
            assertEquals(dtype, out.getDataType());
            assertEquals(input.getShape(), out.getShape());
            double error = Measures.relativeError(Measures.values(out), c.tensor("expected", null, 0).data());
            assertTrue(error <= tolerance, c + " " + dtype + ": rel error " + error);
            assertArrayEquals(before, Measures.values(input), 0.0, "the input is never written");
        }
    }
}
