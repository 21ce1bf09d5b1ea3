package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.NsPreconditioning;

/**
 * The Newton–Schulz iteration of muon-core's {@code NewtonSchulz} on DJL arrays, with plain matrix products (its
 * {@code GEMM} kernel): for a matrix {@code G} (or each of a batch)
 * <pre>
 *   X = G, transposed when taller than wide
 *   X = X / max(s·‖X‖_F, eps)        the norm in float32, float64 when G or the precision is float64
 *                                    (with AOL: X as it is)
 *   repeat nsSteps times:  A = X Xᵀ;  B = b·A + c·A A;  X = a·X + B X
 *     with AOL, in the first step, between A and B: sᵢ = 1/√max(Σⱼ|Aᵢⱼ|, eps), X ← diag(s)·X, A ← diag(s)·A·diag(s)
 *   transpose back
 * </pre>
 * with the step's coefficients {@code (a, b, c)} and the schedule's normalisation safety {@code s}. It runs in
 * float32 or float64; bfloat16 is refused before any array is touched (see {@link DjlSupport}).
 */
final class NsIteration {
    private NsIteration() {
    }

    /**
     * Orthogonalizes a matrix or a batch of matrices; the input is never written.
     *
     * @param g      a {@code [rows, cols]} or {@code [n, rows, cols]} array of a floating-point dtype
     * @param config the iteration's settings (float32 or float64 precision)
     * @return a new array of {@code g}'s shape in the iteration's dtype
     */
    static NDArray orthogonalize(NDArray g, NewtonSchulzConfig config) {
        Shape shape = g.getShape();
        int dims = shape.dimension();
        boolean tall = shape.get(dims - 2) > shape.get(dims - 1);
        boolean wide64 = g.getDataType() == DataType.FLOAT64 || config.nsPrecision() == NsPrecision.FLOAT64;
        DataType normType = wide64 ? DataType.FLOAT64 : DataType.FLOAT32;
        DataType work = config.nsPrecision() == NsPrecision.FLOAT64 ? DataType.FLOAT64 : DataType.FLOAT32;

        NDArray x = g.toType(normType, false);
        if (tall) {
            x = swapLast(x);
        }
        CoefficientSchedule schedule = config.nsCoefficients();
        boolean aol = config.nsPreconditioning() == NsPreconditioning.AOL;
        if (aol) {
            // Unnormalized: AOL's rescaling of the first Gram matrix bounds the spectrum instead.
            x = x.toType(work, false);
        } else {
            NDArray norm = frobenius(x);
            if (schedule.normalizationSafety() != 1.0) {
                norm = norm.mul(schedule.normalizationSafety());
            }
            // Clamped, not added: a zero input gives zeros, never NaN (muon-core's golden README).
            x = x.div(norm.maximum(config.eps())).toType(work, false);
        }
        for (int step = 0; step < config.nsSteps(); step++) {
            Coefficients c = schedule.at(step);
            NDArray a = x.matMul(swapLast(x));
            if (step == 0 && aol) {
                // sᵢ = 1/√max(Σⱼ|Aᵢⱼ|, eps); X ← diag(s)·X (a new array: g is never written); A ← diag(s)·A·diag(s).
                try (NDArray scale = a.abs().sum(new int[] {a.getShape().dimension() - 1}).maximum(config.eps())
                        .sqrt().pow(-1)) {
                    NDArray rows = scale.expandDims(-1);
                    x = x.mul(rows);
                    NDArray raw = a;
                    a = raw.mul(rows.mul(scale.expandDims(-2)));
                    raw.close();
                }
            }
            try (NDArray gram = a; NDArray aa = gram.matMul(gram)) {
                NDArray b = gram.muli(c.b()).addi(aa.muli(c.c()));
                try (NDArray bx = b.matMul(x)) {
                    x = x.muli(c.a()).addi(bx);
                }
            }
        }
        return tall ? swapLast(x) : x;
    }

    /** The Frobenius norm of a matrix (a scalar), or of each matrix of a batch ({@code [n, 1, 1]}). */
    private static NDArray frobenius(NDArray x) {
        Shape shape = x.getShape();
        if (shape.dimension() == 2) {
            return x.norm();
        }
        long n = shape.get(0);
        return x.reshape(n, -1).norm(new int[] {1}, true).reshape(n, 1, 1);
    }

    /** The transpose of a matrix, or of each matrix of a batch (a view). */
    private static NDArray swapLast(NDArray x) {
        return x.getShape().dimension() == 2 ? x.transpose() : x.transpose(0, 2, 1);
    }
}
