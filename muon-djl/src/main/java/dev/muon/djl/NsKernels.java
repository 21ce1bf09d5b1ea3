package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.AssignmentRule;
import dev.muon.orthogonalize.BufferKernels;
import dev.muon.orthogonalize.BufferNewtonSchulz;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;

import java.nio.ByteBuffer;

/**
 * Which products run a Newton–Schulz iteration of muon-djl, and running it: muon-core's native float32 kernels
 * ({@link BufferKernels}: the symmetric iteration of muon-core's CPU path, half products and a fused polynomial, on
 * the array's own memory, which DJL's PyTorch engine hands out without a copy as a direct buffer), or DJL's
 * {@code NDArray} products ({@link NsIteration}).
 *
 * <p>The native kernels run a float32 iteration on the CPU: with {@link NsAlgorithm#AUTO} for a 2-D float32 matrix
 * with at least {@value NewtonSchulz#SYMMETRIC_MIN_ROWS} rows on the short side (muon-core's own threshold for its
 * CPU symmetric kernel); with {@link NsAlgorithm#SYMMETRIC} for every matrix, each of a stack, a float64 one rounded to
 * float32 first, as muon-core's float32 iteration rounds it. Everything else (a GPU array, as muon-core's
 * {@code SYMMETRIC} runs GEMMs there; {@link NsAlgorithm#GEMM}; a JVM where the library does not load) runs the
 * NDArray products; where {@link NsAlgorithm#SYMMETRIC} asks for the native kernels and they cannot run, the optimizer
 * is refused at build.
 */
final class NsKernels {
    private final NewtonSchulzConfig config;
    private final boolean nativeKernels;
    private final boolean always;
    private final float[][] steps;
    private final int threads;
    private BufferNewtonSchulz buffers;

    /**
     * The choice for one configuration.
     *
     * @param config the iteration's settings
     * @throws IllegalArgumentException naming the setting, for {@link NsAlgorithm#SYMMETRIC} where the native kernels
     *                                  cannot serve it
     */
    NsKernels(NewtonSchulzConfig config) {
        this.config = config;
        NsAlgorithm algorithm = config.nsAlgorithm();
        boolean float32 = config.nsPrecision() == NsPrecision.FLOAT32;
        if (algorithm == NsAlgorithm.SYMMETRIC) {
            if (!float32) {
                throw new IllegalArgumentException("nsAlgorithm = SYMMETRIC is not supported by muon-djl with "
                        + "nsPrecision = " + config.nsPrecision() + ": its symmetric kernel is muon-core's native "
                        + "float32 one (use FLOAT32, or AUTO or GEMM)");
            }
            if (!BufferKernels.isAvailable()) {
                throw new IllegalArgumentException("nsAlgorithm = SYMMETRIC is not supported by muon-djl here: its "
                        + "symmetric kernel is muon-core's native float32 one, which cannot run ("
                        + BufferKernels.unavailabilityCause().getMessage() + "); use AUTO or GEMM");
            }
        }
        this.always = algorithm == NsAlgorithm.SYMMETRIC;
        this.nativeKernels = float32 && (algorithm == NsAlgorithm.AUTO || always) && BufferKernels.isAvailable();
        CoefficientSchedule schedule = config.nsCoefficients();
        this.steps = new float[config.nsSteps()][];
        for (int k = 0; k < steps.length; k++) {
            Coefficients c = schedule.at(k);
            steps[k] = new float[] {(float) c.a(), (float) c.b(), (float) c.c()};
        }
        this.threads = Integer.getInteger("ai.djl.pytorch.num_threads", Runtime.getRuntime().availableProcessors());
    }

    /**
     * Whether a parameter of this matrix view and dtype runs the native kernels on the CPU.
     *
     * @param matrix its matrix view
     * @param dtype  its dtype
     * @return true where the native kernels take it
     */
    boolean nativeFor(AssignmentRule.Matrix matrix, DataType dtype) {
        return nativeKernels && (always || matrix.batch() == 0 && dtype == DataType.FLOAT32
                && Math.min(matrix.rows(), matrix.cols()) >= NewtonSchulz.SYMMETRIC_MIN_ROWS);
    }

    /**
     * One line on which kernels run, for the assignment table.
     *
     * @param nativeNames the Muon parameters that run the native kernels (on the CPU)
     * @return the line
     */
    String note(java.util.List<String> nativeNames) {
        if (!nativeKernels) {
            String why = config.nsAlgorithm() == NsAlgorithm.GEMM ? "nsAlgorithm = GEMM"
                    : config.nsPrecision() != NsPrecision.FLOAT32 ? "nsPrecision = " + config.nsPrecision()
                    : "muon-core's native kernels do not run here: " + BufferKernels.unavailabilityCause().getMessage();
            return "Newton-Schulz: DJL's NDArray products (" + why + ")";
        }
        if (nativeNames.isEmpty()) {
            return "Newton-Schulz: DJL's NDArray products (no Muon matrix is float32 with a short side of at least "
                    + NewtonSchulz.SYMMETRIC_MIN_ROWS + ", where muon-core's native kernels start)";
        }
        return dev.muon.AssignmentTable.wrapped("Newton-Schulz: muon-core's native float32 kernels ("
                + BufferKernels.variant().orElseThrow() + ", symmetric iteration) on the CPU for ", nativeNames)
                .strip() + "; DJL's NDArray products for the others";
    }

    /**
     * Orthogonalizes a matrix or a batch of matrices with the chosen products; the input is never written.
     *
     * @param g      a {@code [rows, cols]} or {@code [n, rows, cols]} array of a floating-point dtype
     * @param matrix its matrix view
     * @return a new array of {@code g}'s shape in the iteration's dtype
     */
    NDArray orthogonalize(NDArray g, AssignmentRule.Matrix matrix) {
        // As muon-core's SYMMETRIC: the symmetric kernel on the CPU, the products on a GPU.
        if (!nativeFor(matrix, g.getDataType()) || !g.getDevice().getDeviceType().equals(ai.djl.Device.Type.CPU)) {
            return NsIteration.orthogonalize(g, config);
        }
        NDArray x = g.getDataType() == DataType.FLOAT32 ? g : g.toType(DataType.FLOAT32, false);
        if (matrix.batch() == 0) {
            return orthogonalizeMatrix(x, matrix);
        }
        ai.djl.ndarray.NDList each = new ai.djl.ndarray.NDList();
        for (long i = 0; i < matrix.batch(); i++) {
            each.add(orthogonalizeMatrix(x.get(i), new AssignmentRule.Matrix(0, matrix.rows(), matrix.cols())));
        }
        return ai.djl.ndarray.NDArrays.stack(each);
    }

    /** One float32 CPU matrix through the native kernels. */
    private NDArray orthogonalizeMatrix(NDArray g, AssignmentRule.Matrix matrix) {
        int rows = Math.toIntExact(matrix.rows());
        int cols = Math.toIntExact(matrix.cols());
        // DJL's PyTorch engine hands a contiguous CPU array's memory out as a direct buffer, without a copy.
        ByteBuffer input = g.toByteBuffer(true);
        if (!input.isDirect()) {
            return NsIteration.orthogonalize(g, config);
        }
        if (buffers == null) {
            buffers = new BufferNewtonSchulz();
        }
        ByteBuffer wide = buffers.orthogonalize(input, rows, cols, steps,
                config.nsCoefficients().normalizationSafety(), config.eps(), threads);
        int m = Math.min(rows, cols);
        int n = Math.max(rows, cols);
        // The workspace is reused at the next call: the result is copied out of it into memory of DJL's.
        NDArray view = g.getManager().create(wide, new Shape(m, n), DataType.FLOAT32);
        NDArray out = view.duplicate();
        view.close();
        return rows > cols ? out.transpose() : out;
    }
}
