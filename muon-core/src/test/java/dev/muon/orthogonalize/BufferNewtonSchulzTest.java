package dev.muon.orthogonalize;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link BufferNewtonSchulz}, the iterations muon-djl runs on direct buffers: each gives the bits of
 * {@link NewtonSchulz}'s native float32 CPU path for the same algorithm (the same products in the same order, the Gram
 * iteration through the one {@link GramSchedule}), wide and tall, across restarts, and one workspace serves shapes
 * and algorithms in turn.
 */
@ExtendWith(NativeScopePerTest.class)
class BufferNewtonSchulzTest {
    private static final NewtonSchulzConfig CONFIG = NewtonSchulzConfig.defaults();

    @BeforeEach
    void seed() {
        torch.manual_seed(29);
        assumeTrue(NativeKernels.isAvailable(), () -> "native kernels off: " + NativeKernels.unavailabilityCause());
        assumeTrue(BufferKernels.isAvailable(), () -> "buffer kernels off: " + BufferKernels.unavailabilityCause());
    }

    static Stream<Arguments> shapes() {
        // Wide and tall; aspect ratios 1 to 4 and a ragged one; 5 steps cross the Gram iteration's restart, 7 cross
        // two restarts' worth of steps, 2 end before it.
        return Stream.of(NsAlgorithm.SYMMETRIC, NsAlgorithm.GRAM).flatMap(a -> Stream.of(
                Arguments.of(a, 96, 400, 5), Arguments.of(a, 400, 96, 5), Arguments.of(a, 130, 130, 5),
                Arguments.of(a, 77, 301, 7), Arguments.of(a, 64, 128, 2)));
    }

    @ParameterizedTest(name = "{0} {1}x{2}, {3} steps")
    @MethodSource("shapes")
    void eachIteration_givesNewtonSchulzsNativeBits(NsAlgorithm algorithm, int rows, int cols, int steps) {
        NewtonSchulzConfig config = CONFIG.withNsSteps(steps).withNsPrecision(NsPrecision.FLOAT32)
                .withNsAlgorithm(algorithm);
        Tensor g = torch.randn(rows, cols);
        float[] expected = floats(new NewtonSchulz(config).orthogonalize(g));
        BufferNewtonSchulz ns = new BufferNewtonSchulz();
        float[] wide = run(ns, algorithm, g, rows, cols, config);
        float[] got = rows > cols ? transposed(wide, cols, rows) : wide;
        assertEquals(expected.length, got.length);
        for (int i = 0; i < got.length; i++) {
            assertEquals(Float.floatToIntBits(expected[i]), Float.floatToIntBits(got[i]),
                    () -> algorithm + " " + rows + "x" + cols + ": the buffer iteration's bits differ from "
                            + "NewtonSchulz's");
        }
    }

    static Stream<Arguments> aolShapes() {
        return Stream.of(NsAlgorithm.SYMMETRIC, NsAlgorithm.GRAM).flatMap(a -> Stream.of(
                Arguments.of(a, 48, 160), Arguments.of(a, 200, 64), Arguments.of(a, 96, 96)));
    }

    /**
     * With AOL (Turbo-Muon's four steps) the buffer iterations match the float64 formula within muon-core's float32
     * bound, as {@code NewtonSchulz}'s own AOL does (AolNewtonSchulzTest), and differ from the Frobenius-normalized
     * iteration: the preconditioning ran.
     */
    @ParameterizedTest(name = "{0} {1}x{2}")
    @MethodSource("aolShapes")
    void aol_matchesTheFloat64Formula(NsAlgorithm algorithm, int rows, int cols) {
        dev.muon.MuonConfig muon = dev.muon.MuonConfig.defaults().withAol().withNsPrecision(NsPrecision.FLOAT32)
                .withNsAlgorithm(algorithm);
        NewtonSchulzConfig config = muon.newtonSchulz();
        Tensor g = torch.randn(rows, cols);
        float[] wide = run(new BufferNewtonSchulz(), algorithm, g, rows, cols, config);
        float[] got = rows > cols ? transposed(wide, cols, rows) : wide;
        float[] input = floats(g);
        double[][] u = new double[rows][cols];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                u[i][j] = input[i * cols + j];
            }
        }
        double[][] expected = dev.muon.golden.Float64Update.newtonSchulz(u, muon);
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                double d = got[i * cols + j] - expected[i][j];
                diff += d * d;
                norm += expected[i][j] * expected[i][j];
            }
        }
        double error = Math.sqrt(diff / norm);
        assertTrue(error <= 1e-5, algorithm + " " + rows + "x" + cols + ": relative error " + error);
        float[] frobenius = run(new BufferNewtonSchulz(), algorithm, g, rows, cols,
                config.withNsPreconditioning(NsPreconditioning.FROBENIUS));
        assertTrue(!java.util.Arrays.equals(frobenius, wide), "AOL gave the Frobenius iteration's result");
    }

    @Test
    void aNullPreconditioning_isRefused_namingIt() {
        ByteBuffer g = BufferKernels.allocate(64);
        NullPointerException e = assertThrows(NullPointerException.class,
                () -> new BufferNewtonSchulz().symmetric(g, 4, 4, new float[][] {{1, 0, 0}}, 1.0, 1e-7, 1, null));
        assertEquals("preconditioning must not be null", e.getMessage());
    }

    @Test
    void oneWorkspace_servesShapesAndAlgorithmsInTurn() {
        // Grown for the large shape, then reused for a smaller one and the other algorithm: a stale entry of the
        // larger workspace must not leak into the smaller result.
        BufferNewtonSchulz ns = new BufferNewtonSchulz();
        Tensor big = torch.randn(128, 512);
        Tensor small = torch.randn(48, 200);
        NewtonSchulzConfig gram = CONFIG.withNsPrecision(NsPrecision.FLOAT32).withNsAlgorithm(NsAlgorithm.GRAM);
        NewtonSchulzConfig symmetric = gram.withNsAlgorithm(NsAlgorithm.SYMMETRIC);
        run(ns, NsAlgorithm.SYMMETRIC, big, 128, 512, symmetric);
        float[] afterBig = run(ns, NsAlgorithm.GRAM, small, 48, 200, gram);
        float[] fresh = run(new BufferNewtonSchulz(), NsAlgorithm.GRAM, small, 48, 200, gram);
        assertTrue(java.util.Arrays.equals(fresh, afterBig), "a reused workspace changed the result");
        float[] expected = floats(new NewtonSchulz(gram).orthogonalize(small));
        assertTrue(java.util.Arrays.equals(expected, afterBig), "the reused workspace's result is not NewtonSchulz's");
    }

    @Test
    void aSizeBelowOne_isRefused_namingBoth() {
        ByteBuffer g = BufferKernels.allocate(64);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BufferNewtonSchulz().gram(g, 0, 4, new float[][] {{1, 0, 0}}, 1.0, 1e-7, 1,
                        NsPreconditioning.FROBENIUS));
        assertEquals("rows and cols must be > 0, got 0 and 4", e.getMessage());
    }

    /** Each argument the kernels would take as it is, refused first, naming it, the rule and the value. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "threads 0     | 0 | 3 | 1.0 | 1e-7 | threads must be >= 1, got 0",
            "short step    | 1 | 2 | 1.0 | 1e-7 | steps[0] must hold the 3 coefficients (a, b, c), got 2 numbers",
            "eps 0         | 1 | 3 | 1.0 | 0    | eps must be a finite number > 0, got 0.0",
            "eps NaN       | 1 | 3 | 1.0 | NaN  | eps must be a finite number > 0, got NaN",
            "safety 0.5    | 1 | 3 | 0.5 | 1e-7 | safety must be a finite number >= 1, got 0.5",
    })
    void anArgumentTheKernelsWouldTakeAsItIs_isRefused(String what, int threads, int coefficients, double safety,
                                                        double eps, String message) {
        ByteBuffer g = BufferKernels.allocate(64);
        float[][] steps = {new float[coefficients]};
        for (boolean gram : new boolean[] {false, true}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> {
                BufferNewtonSchulz ns = new BufferNewtonSchulz();
                if (gram) {
                    ns.gram(g, 4, 4, steps, safety, eps, threads, NsPreconditioning.FROBENIUS);
                } else {
                    ns.symmetric(g, 4, 4, steps, safety, eps, threads, NsPreconditioning.FROBENIUS);
                }
            });
            assertEquals(message, e.getMessage(), what);
        }
    }

    private static float[] run(BufferNewtonSchulz ns, NsAlgorithm algorithm, Tensor g, int rows, int cols,
                               NewtonSchulzConfig config) {
        ByteBuffer input = BufferKernels.allocate((long) rows * cols * Float.BYTES);
        input.asFloatBuffer().put(floats(g));
        float[][] steps = new float[config.nsSteps()][];
        for (int k = 0; k < steps.length; k++) {
            Coefficients c = config.nsCoefficients().at(k);
            steps[k] = new float[] {(float) c.a(), (float) c.b(), (float) c.c()};
        }
        // The threads NewtonSchulz's native products use; the kernels' bits do not depend on them.
        int threads = CpuContention.threadsFor(torch.get_num_threads());
        double safety = config.nsCoefficients().normalizationSafety();
        ByteBuffer out = algorithm == NsAlgorithm.GRAM
                ? ns.gram(input, rows, cols, steps, safety, config.eps(), threads, config.nsPreconditioning())
                : ns.symmetric(input, rows, cols, steps, safety, config.eps(), threads, config.nsPreconditioning());
        FloatBuffer floats = out.asFloatBuffer();
        float[] result = new float[rows * cols];
        floats.get(result);
        return result;
    }

    private static float[] floats(Tensor t) {
        double[] values = Tensors.values(t.to(ScalarType.Float));
        float[] f = new float[values.length];
        for (int i = 0; i < f.length; i++) {
            f[i] = (float) values[i];
        }
        return f;
    }

    private static float[] transposed(float[] a, int rows, int cols) {
        float[] t = new float[a.length];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                t[j * rows + i] = a[i * cols + j];
            }
        }
        return t;
    }
}
