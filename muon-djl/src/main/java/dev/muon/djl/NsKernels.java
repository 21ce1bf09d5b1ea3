package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.AssignmentRule;
import dev.muon.AssignmentTable;
import dev.muon.orthogonalize.BufferKernels;
import dev.muon.orthogonalize.BufferNewtonSchulz;
import dev.muon.orthogonalize.CoefficientSchedule;
import dev.muon.orthogonalize.Coefficients;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;

/**
 * Which products run a Newton–Schulz iteration of muon-djl, and running it: muon-core's native float32 kernels
 * ({@link BufferNewtonSchulz} on {@link BufferKernels}: muon-core's CPU symmetric and Gram iterations, half products
 * and a fused polynomial, product for product, on the array's own memory, which DJL's PyTorch engine hands out
 * without a copy as a direct buffer), or DJL's {@code NDArray} products ({@link NsIteration}).
 *
 * <p>The native kernels run a float32 iteration on the CPU: with {@link NsAlgorithm#AUTO} for every 2-D float32
 * matrix (the Gram iteration from a long side {@value NewtonSchulz#GRAM_MIN_ASPECT} times the short one, muon-core's
 * rule, the symmetric below it; at any size, where muon-core starts at {@value NewtonSchulz#SYMMETRIC_MIN_ROWS} rows,
 * because DJL's products cost more per call than libtorch's in muon-core's process); with
 * {@link NsAlgorithm#SYMMETRIC} or {@link NsAlgorithm#GRAM} that iteration for every matrix, each of a stack, a
 * float64 one rounded to float32 first, as muon-core's float32 iteration rounds it. Everything else (a GPU array
 * with {@code AUTO} or {@code SYMMETRIC}, as muon-core's {@code SYMMETRIC} runs GEMMs there;
 * {@link NsAlgorithm#GEMM}; a JVM where the library does not load) runs the NDArray products. Where
 * {@code SYMMETRIC} or {@code GRAM} asks for the native kernels and they cannot run, the optimizer is refused at
 * build; {@code GRAM} for a parameter on a GPU (muon-core runs its Gram iteration there on libtorch, which muon-djl
 * cannot reach) is refused when the trainer is initialized.
 */
final class NsKernels {
    /** What runs one matrix's iteration. */
    enum Kernel {
        /** DJL's {@code NDArray} products, the plain iteration. */
        NDARRAY("DJL's NDArray products"),
        /** muon-core's native float32 symmetric iteration. */
        SYMMETRIC("symmetric iteration"),
        /** muon-core's native float32 Gram iteration. */
        GRAM("Gram iteration");

        private final String label;

        Kernel(String label) {
            this.label = label;
        }
    }

    private final NewtonSchulzConfig config;
    private final boolean nativeKernels;
    private final float[][] steps;
    /** DJL's setting of libtorch's intra-op threads, which the native kernels follow. */
    static final String THREADS_PROPERTY = "ai.djl.pytorch.num_threads";
    private final int threads;
    private BufferNewtonSchulz buffers;

    /**
     * The choice for one configuration.
     *
     * @param config the iteration's settings
     * @throws IllegalArgumentException naming the setting, for {@link NsAlgorithm#SYMMETRIC} or
     *                                  {@link NsAlgorithm#GRAM} where the native kernels cannot serve it
     */
    NsKernels(NewtonSchulzConfig config) {
        this.config = config;
        NsAlgorithm algorithm = config.nsAlgorithm();
        boolean float32 = config.nsPrecision() == NsPrecision.FLOAT32;
        boolean explicit = algorithm == NsAlgorithm.SYMMETRIC || algorithm == NsAlgorithm.GRAM;
        if (explicit) {
            String kind = algorithm == NsAlgorithm.GRAM ? "Gram" : "symmetric";
            if (!float32) {
                throw new IllegalArgumentException("nsAlgorithm = " + algorithm + " is not supported by muon-djl with "
                        + "nsPrecision = " + config.nsPrecision() + ": its " + kind + " kernel is muon-core's native "
                        + "float32 one (use FLOAT32, or AUTO or GEMM)");
            }
            if (!BufferKernels.isAvailable()) {
                throw new IllegalArgumentException("nsAlgorithm = " + algorithm + " is not supported by muon-djl here: "
                        + "its " + kind + " kernel is muon-core's native float32 one, which cannot run ("
                        + BufferKernels.unavailabilityCause().getMessage() + "); use AUTO or GEMM");
            }
        }
        this.nativeKernels = float32 && (algorithm == NsAlgorithm.AUTO || explicit) && BufferKernels.isAvailable();
        CoefficientSchedule schedule = config.nsCoefficients();
        this.steps = new float[config.nsSteps()][];
        for (int k = 0; k < steps.length; k++) {
            Coefficients c = schedule.at(k);
            steps[k] = new float[] {(float) c.a(), (float) c.b(), (float) c.c()};
        }
        this.threads = threads(System.getProperty(THREADS_PROPERTY), Runtime.getRuntime().availableProcessors());
    }

    /**
     * The native kernels' thread count: DJL's own setting for libtorch's intra-op threads, so that both run on as
     * many cores, or every core where it is not set.
     *
     * @param value    {@value #THREADS_PROPERTY}, or null
     * @param fallback the count where it is not set
     * @return the count
     * @throws IllegalArgumentException if it is set to anything but a whole number {@code >= 1}
     */
    static int threads(String value, int fallback) {
        if (value == null) {
            return fallback;
        }
        try {
            int threads = Integer.parseInt(value.trim());
            if (threads >= 1) {
                return threads;
            }
        } catch (NumberFormatException e) {
            // refused below, with the value
        }
        throw new IllegalArgumentException(THREADS_PROPERTY + " must be a whole number >= 1, got '" + value + "'");
    }

    /**
     * What runs a parameter of this matrix view and dtype on the CPU.
     *
     * @param matrix its matrix view
     * @param dtype  its dtype
     * @return the kernel
     */
    Kernel kernelFor(AssignmentRule.Matrix matrix, DataType dtype) {
        if (!nativeKernels) {
            return Kernel.NDARRAY;
        }
        switch (config.nsAlgorithm()) {
            case SYMMETRIC:
                return Kernel.SYMMETRIC;
            case GRAM:
                return Kernel.GRAM;
            default:
                break;
        }
        if (matrix.batch() != 0 || dtype != DataType.FLOAT32) {
            return Kernel.NDARRAY;
        }
        // No size threshold, unlike muon-core's: there a small matrix's plain iteration is a few libtorch GEMMs in
        // the same process, here it is dozens of calls into DJL's engine, each with an array to allocate, which cost
        // more than the native iteration even for DJL's MNIST MLP (128 x 784 and 64 x 128: docs/benchmarks.md).
        long m = Math.min(matrix.rows(), matrix.cols());
        long n = Math.max(matrix.rows(), matrix.cols());
        return n >= NewtonSchulz.GRAM_MIN_ASPECT * m ? Kernel.GRAM : Kernel.SYMMETRIC;
    }

    /**
     * Checks that a Muon parameter's array can run the requested kernel: {@link NsAlgorithm#GRAM} runs on the CPU
     * only.
     *
     * @param name  the parameter's name
     * @param array its array
     * @throws IllegalArgumentException naming the parameter, its device and the setting
     */
    void requireServes(String name, NDArray array) {
        if (config.nsAlgorithm() == NsAlgorithm.GRAM && !isCpu(array)) {
            throw new IllegalArgumentException("nsAlgorithm = GRAM is not supported by muon-djl for parameter '" + name
                    + "' on " + array.getDevice() + ": its Gram kernel is muon-core's native float32 one, which "
                    + "runs on the CPU (use AUTO, GEMM or SYMMETRIC, which run DJL's products there)");
        }
    }

    /**
     * One line on which kernels run, for the assignment table.
     *
     * @param kernels the Muon parameters' kernels by name, in the table's order
     * @return the line
     */
    String note(Map<String, Kernel> kernels) {
        if (!nativeKernels) {
            String why = config.nsAlgorithm() == NsAlgorithm.GEMM ? "nsAlgorithm = GEMM"
                    : config.nsPrecision() != NsPrecision.FLOAT32 ? "nsPrecision = " + config.nsPrecision()
                    : "muon-core's native kernels do not run here: " + BufferKernels.unavailabilityCause().getMessage();
            return "Newton-Schulz: DJL's NDArray products (" + why + ")";
        }
        if (kernels.values().stream().allMatch(k -> k == Kernel.NDARRAY)) {
            return "Newton-Schulz: DJL's NDArray products (no Muon parameter is a single float32 matrix, which "
                    + "muon-core's native kernels take)";
        }
        StringBuilder line = new StringBuilder("Newton-Schulz: muon-core's native float32 kernels ("
                + BufferKernels.variant().orElseThrow() + ") on the CPU: ");
        String separator = "";
        for (Kernel kernel : List.of(Kernel.GRAM, Kernel.SYMMETRIC)) {
            List<String> names = namesOf(kernels, kernel);
            if (!names.isEmpty()) {
                line.append(separator).append(kernel.label).append(" for ").append(String.join(", ", names));
                separator = "; ";
            }
        }
        if (!namesOf(kernels, Kernel.NDARRAY).isEmpty()) {
            line.append("; DJL's NDArray products for the others");
        }
        return AssignmentTable.wrappedLines(line.toString()).strip();
    }

    private static List<String> namesOf(Map<String, Kernel> kernels, Kernel kernel) {
        return kernels.entrySet().stream().filter(e -> e.getValue() == kernel).map(Map.Entry::getKey).toList();
    }

    /**
     * Orthogonalizes a matrix or a batch of matrices with the chosen products; the input is never written.
     *
     * @param g      a {@code [rows, cols]} or {@code [n, rows, cols]} array of a floating-point dtype
     * @param matrix its matrix view
     * @return a new array of {@code g}'s shape in the iteration's dtype
     */
    NDArray orthogonalize(NDArray g, AssignmentRule.Matrix matrix) {
        Kernel kernel = kernelFor(matrix, g.getDataType());
        // As muon-core's SYMMETRIC: the symmetric kernel on the CPU, the products on a GPU (GRAM is refused there).
        if (kernel == Kernel.NDARRAY || !isCpu(g)) {
            return NsIteration.orthogonalize(g, config);
        }
        NDArray x = g.getDataType() == DataType.FLOAT32 ? g : g.toType(DataType.FLOAT32, false);
        if (matrix.batch() == 0) {
            return orthogonalizeMatrix(x, matrix, kernel);
        }
        ai.djl.ndarray.NDList each = new ai.djl.ndarray.NDList();
        for (long i = 0; i < matrix.batch(); i++) {
            each.add(orthogonalizeMatrix(x.get(i), new AssignmentRule.Matrix(0, matrix.rows(), matrix.cols()),
                    kernel));
        }
        return ai.djl.ndarray.NDArrays.stack(each);
    }

    private static boolean isCpu(NDArray array) {
        return array.getDevice().getDeviceType().equals(ai.djl.Device.Type.CPU);
    }

    /** One float32 CPU matrix through the native kernels. */
    private NDArray orthogonalizeMatrix(NDArray g, AssignmentRule.Matrix matrix, Kernel kernel) {
        int rows = Math.toIntExact(matrix.rows());
        int cols = Math.toIntExact(matrix.cols());
        // DJL's PyTorch engine hands a contiguous CPU array's memory out as a direct buffer, without a copy.
        ByteBuffer input = g.toByteBuffer(true);
        if (!input.isDirect()) {
            // An array that hands out a copy on the heap instead: the kernels read native memory, so the copy goes
            // there, and the kernel this parameter was given still runs (never DJL's products in its place).
            input = ByteBuffer.allocateDirect(input.remaining()).order(ByteOrder.nativeOrder())
                    .put(input.duplicate()).flip();
        }
        if (buffers == null) {
            buffers = new BufferNewtonSchulz();
        }
        double safety = config.nsCoefficients().normalizationSafety();
        ByteBuffer wide = kernel == Kernel.GRAM
                ? buffers.gram(input, rows, cols, steps, safety, config.eps(), threads, config.nsPreconditioning())
                : buffers.symmetric(input, rows, cols, steps, safety, config.eps(), threads,
                        config.nsPreconditioning());
        int m = Math.min(rows, cols);
        int n = Math.max(rows, cols);
        // The workspace is reused at the next call: the result is copied out of it into memory of DJL's.
        NDArray view = g.getManager().create(wide, new Shape(m, n), DataType.FLOAT32);
        NDArray out = view.duplicate();
        view.close();
        return rows > cols ? out.transpose() : out;
    }
}
