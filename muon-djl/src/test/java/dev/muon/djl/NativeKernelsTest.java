package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.AssignmentRule;
import dev.muon.MuonConfig;
import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.orthogonalize.BufferKernels;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * muon-core's native float32 kernels in DJL's JVM, without JavaCPP ({@link BufferKernels}): they load beside DJL's
 * libtorch, every {@code ns_*} golden case through both iterations (symmetric and Gram) meets the float32 tolerance
 * of the golden README, {@code AUTO} picks muon-core's kernel by muon-core's rule and agrees with DJL's products, the
 * table says which ran, and a setting that needs them is refused where they cannot run.
 */
class NativeKernelsTest {

    /** Skips where the build could not make the library (no gcc, another platform); fails if it does not load. */
    @BeforeAll
    static void kernelsRunHere() {
        Throwable cause = BufferKernels.unavailabilityCause();
        assumeTrue(cause == null || !(cause.getMessage().contains("built without gcc")
                || cause.getMessage().contains("Linux x86-64 only")), () -> "native kernels not built: " + cause);
        assertTrue(BufferKernels.isAvailable(), () -> "muon-core's native kernels do not load beside DJL's "
                + "libtorch: " + cause);
    }

    static Stream<Arguments> cases() {
        return Stream.of(NsAlgorithm.SYMMETRIC, NsAlgorithm.GRAM).flatMap(a -> GoldenReader.cases(
                n -> n.startsWith("ns_")).stream().map(c -> Arguments.of(a, c)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void everyGoldenCase_throughTheNativeKernels_meetsTheFloat32Tolerance(NsAlgorithm algorithm, GoldenCase c) {
        NsKernels kernels = new NsKernels(GoldenConfigs.newtonSchulz(c, NsPrecision.FLOAT32)
                .withNsAlgorithm(algorithm));
        AssignmentRule.Matrix matrix = new AssignmentRule.Matrix(0, c.shape()[0], c.shape()[1]);
        assertEquals(algorithm.name(), kernels.kernelFor(matrix, DataType.FLOAT32).name());
        OrthogonalizerGolden.assertMatches(c, DataType.FLOAT32, 1e-5, input -> kernels.orthogonalize(input, matrix));
    }

    @Test
    void auto_picksByMuonCoresAspectRule_atEverySize_andAgreesWithDjlsProducts() {
        try (NDManager manager = NDManager.newBaseManager()) {
            MuonConfig config = MuonConfig.defaults();
            NsKernels auto = new NsKernels(config.newtonSchulz());
            // muon-core's aspect rule on the CPU: the Gram iteration from an aspect ratio of 2, the symmetric below
            // it; at every size (muon-core starts at 256 rows, where its plain iteration's GEMMs stop winning).
            assertEquals(NsKernels.Kernel.GRAM, kernelFor(auto, 0, 640, 256, DataType.FLOAT32));
            assertEquals(NsKernels.Kernel.GRAM, kernelFor(auto, 0, 256, 512, DataType.FLOAT32));
            assertEquals(NsKernels.Kernel.SYMMETRIC, kernelFor(auto, 0, 256, 511, DataType.FLOAT32));
            assertEquals(NsKernels.Kernel.GRAM, kernelFor(auto, 0, 128, 784, DataType.FLOAT32),
                    "below muon-core's threshold too");
            assertEquals(NsKernels.Kernel.SYMMETRIC, kernelFor(auto, 0, 64, 100, DataType.FLOAT32));
            assertEquals(NsKernels.Kernel.NDARRAY, kernelFor(auto, 0, 640, 256, DataType.FLOAT64));
            assertEquals(NsKernels.Kernel.NDARRAY, kernelFor(auto, 2, 640, 256, DataType.FLOAT32),
                    "a stack runs DJL's batched products, as muon-core batches");
            NsKernels gemm = new NsKernels(config.withNsAlgorithm(NsAlgorithm.GEMM).newtonSchulz());
            assertEquals(NsKernels.Kernel.NDARRAY, kernelFor(gemm, 0, 640, 256, DataType.FLOAT32));
            for (long[] shape : new long[][] {{640, 256}, {300, 256}, {64, 100}}) {
                NDArray g = manager.randomNormal(new Shape(shape));
                AssignmentRule.Matrix matrix = new AssignmentRule.Matrix(0, shape[0], shape[1]);
                double[] nativeOut = Measures.values(auto.orthogonalize(g, matrix));
                double[] products = Measures.values(NsIteration.orthogonalize(g, config.newtonSchulz()));
                double[] exact = Measures.values(NsIteration.orthogonalize(g.toType(DataType.FLOAT64, false),
                        config.withNsPrecision(NsPrecision.FLOAT64).newtonSchulz()));
                String kernel = auto.kernelFor(matrix, DataType.FLOAT32).name();
                assertTrue(Measures.relativeError(nativeOut, exact) <= 1e-5, kernel + " against float64: "
                        + Measures.relativeError(nativeOut, exact));
                assertTrue(Measures.relativeError(products, exact) <= 1e-5);
            }
        }
    }

    /**
     * An array that hands out its values as a copy on the heap, not a direct buffer, still runs the kernel it was
     * given, bit for bit as the array itself does, never DJL's products in its place.
     */
    @ParameterizedTest
    @EnumSource(value = NsAlgorithm.class, names = {"SYMMETRIC", "GRAM"})
    void anArrayWithoutADirectBuffer_runsTheRequestedKernel(NsAlgorithm algorithm) {
        try (NDManager manager = NDManager.newBaseManager()) {
            NsKernels kernels = new NsKernels(MuonConfig.defaults().withNsAlgorithm(algorithm).newtonSchulz());
            NDArray g = manager.randomNormal(new Shape(96, 256));
            NDArray onHeap = (NDArray) java.lang.reflect.Proxy.newProxyInstance(NDArray.class.getClassLoader(),
                    new Class<?>[] {NDArray.class}, (proxy, method, args) -> {
                        if (method.getName().equals("toByteBuffer")) {
                            java.nio.ByteBuffer direct = g.toByteBuffer(true);
                            java.nio.ByteBuffer heap = java.nio.ByteBuffer.allocate(direct.remaining())
                                    .order(direct.order());
                            return heap.put(direct.duplicate()).flip();
                        }
                        return method.invoke(g, args);
                    });
            assertFalse(onHeap.toByteBuffer(true).isDirect(), "the case this test is about");
            AssignmentRule.Matrix matrix = new AssignmentRule.Matrix(0, 96, 256);
            double[] fromHeap = Measures.values(kernels.orthogonalize(onHeap, matrix));
            double[] direct = Measures.values(kernels.orthogonalize(g, matrix));
            assertArrayEquals(direct, fromHeap);
            double[] products = Measures.values(NsIteration.orthogonalize(g, MuonConfig.defaults().newtonSchulz()));
            assertFalse(java.util.Arrays.equals(products, fromHeap), "the kernel ran, not DJL's products");
        }
    }

    /** The kernel {@code kernels} picks for a {@code rows × cols} matrix, or a stack of {@code batch} of them. */
    private static NsKernels.Kernel kernelFor(NsKernels kernels, long batch, long rows, long cols, DataType dtype) {
        return kernels.kernelFor(new AssignmentRule.Matrix(batch, rows, cols), dtype);
    }

    @Test
    void gram_forAParameterOffTheCpu_isRefused_namingIt() {
        // No GPU is needed to check the rule: an array that says it lives on a GPU.
        NDArray onGpu = (NDArray) java.lang.reflect.Proxy.newProxyInstance(NDArray.class.getClassLoader(),
                new Class<?>[] {NDArray.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getDevice")) {
                        return ai.djl.Device.gpu(0);
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
        NsKernels gram = new NsKernels(MuonConfig.defaults().withNsAlgorithm(NsAlgorithm.GRAM).newtonSchulz());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> gram.requireServes("blocks.0.mlp.weight", onGpu));
        assertEquals("nsAlgorithm = GRAM is not supported by muon-djl for parameter 'blocks.0.mlp.weight' on gpu(0): "
                + "its Gram kernel is muon-core's native float32 one, which runs on the CPU (use AUTO, GEMM or "
                + "SYMMETRIC, which run DJL's products there)", e.getMessage());
        // The other kernels run DJL's products on a GPU, as muon-core's SYMMETRIC runs GEMMs there.
        new NsKernels(MuonConfig.defaults().withNsAlgorithm(NsAlgorithm.SYMMETRIC).newtonSchulz())
                .requireServes("blocks.0.mlp.weight", onGpu);
    }

    @Test
    void theTable_saysWhichKernelsRan() {
        try (NDManager manager = NDManager.newBaseManager()) {
            ParamBlock block = new ParamBlock().child("big", new ParamBlock().param("weight",
                    manager.randomNormal(new Shape(256, 300)))).child("wide", new ParamBlock().param("weight",
                    manager.randomNormal(new Shape(256, 600)))).child("small", new ParamBlock().param("weight",
                    manager.randomNormal(new Shape(300, 16)))).child("exact", new ParamBlock().param("weight",
                    manager.randomNormal(new Shape(64, 64)).toType(DataType.FLOAT64, false)))
                    .child("out", new ParamBlock().param("weight",
                    manager.randomNormal(new Shape(10, 300))));
            String table = MuonAdamW.builder().optBlock(block).build().assignment().toString();
            // The table's last lines, wrapped at its width like the rest of it.
            String note = table.substring(table.indexOf("Newton-Schulz: "));
            assertTrue(note.lines().allMatch(line -> line.length() <= 100), table);
            assertEquals("Newton-Schulz: muon-core's native float32 kernels (" + BufferKernels.variant().orElseThrow()
                    + ") on the CPU: Gram iteration for 02wide_weight, 03small_weight; symmetric iteration for "
                    + "01big_weight; DJL's NDArray products for the others", note.replaceAll("\\s+", " ").strip());
            String gemm = MuonAdamW.builder().optBlock(block).optMuon(MuonConfig.dropIn(1e-3, 1e-2)
                    .withNsAlgorithm(NsAlgorithm.GEMM)).build().assignment().toString();
            assertTrue(gemm.endsWith("Newton-Schulz: DJL's NDArray products (nsAlgorithm = GEMM)\n"), gemm);
        }
    }

    @Test
    void symmetric_inFloat64_isRefused_namingTheSettings() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new NsKernels(
                MuonConfig.defaults().withNsAlgorithm(NsAlgorithm.SYMMETRIC).withNsPrecision(NsPrecision.FLOAT64)
                        .newtonSchulz()));
        assertEquals("nsAlgorithm = SYMMETRIC is not supported by muon-djl with nsPrecision = FLOAT64: its "
                + "symmetric kernel is muon-core's native float32 one (use FLOAT32, or AUTO or GEMM)", e.getMessage());
    }
}
