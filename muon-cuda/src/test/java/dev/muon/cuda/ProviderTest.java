package dev.muon.cuda;

import dev.muon.cuda.internal.CudaFusedUpdateKernelsProvider;
import dev.muon.internal.FusedUpdateKernelsProvider;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import dev.muon.orthogonalize.OrthogonalizerProvider;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ServiceLoader registrations of muon-cuda's providers (the orthogonalizer and the fused update stages) and their
 * fallback decisions that need no GPU.
 */
// PointerScope and CUDAGuard work by existing: their try blocks never name them.
@SuppressWarnings("try")
class ProviderTest {
    private static final NewtonSchulzConfig BF16 = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16);

    /** Each service muon-cuda implements, with the provider its {@code META-INF/services} file names. */
    static Stream<Arguments> registrations() {
        return Stream.of(
                Arguments.of(OrthogonalizerProvider.class, CudaOrthogonalizerProvider.class),
                Arguments.of(FusedUpdateKernelsProvider.class, CudaFusedUpdateKernelsProvider.class));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("registrations")
    void serviceLoader_findsTheCudaProvider(Class<?> service, Class<?> provider) {
        // The message lists what the loader found.
        List<String> names = ServiceLoader.load(service).stream().map(p -> p.type().getName()).toList();
        assertTrue(names.contains(provider.getName()), names.toString());
    }

    @Test
    void cpuDevice_isNotServed() {
        try (PointerScope scope = new PointerScope()) {
            Optional<Orthogonalizer> o = new CudaOrthogonalizerProvider().create(BF16, new Device(torch.DeviceType.CPU));
            assertTrue(o.isEmpty());
        }
    }

    @Test
    void fusedUpdates_cpuParameter_isNotServed() {
        try (PointerScope scope = new PointerScope()) {
            assertTrue(new CudaFusedUpdateKernelsProvider().forParameter(torch.zeros(8, 4), ScalarType.BFloat16)
                    .isEmpty());
        }
    }

    @Test
    void cudaDevice_withoutCuda_isNotServed_andTheReasonIsKnown() {
        if (CudaSupport.isAvailable()) {
            return;  // covered by CudaNewtonSchulzGpuTest on a GPU machine
        }
        try (PointerScope scope = new PointerScope()) {
            Optional<Orthogonalizer> o = new CudaOrthogonalizerProvider().create(BF16,
                    new Device(torch.DeviceType.CUDA, (byte) 0));
            assertTrue(o.isEmpty());
            System.out.println("ProviderTest: CUDA parameters fall back to libtorch because: "
                    + CudaSupport.unavailabilityCause().getMessage());
        }
    }

    @Test
    void constructingOnCpu_isRejected() {
        try (PointerScope scope = new PointerScope()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new CudaNewtonSchulz(BF16, new Device(torch.DeviceType.CPU)));
            assertEquals("device must be a CUDA device, got cpu", e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new FusedUpdates(new Device(torch.DeviceType.CPU)));
        }
    }

    /**
     * GEMM and GRAM ask for what the kernels do not run: the public constructor refuses them, naming the setting,
     * before it touches a device (the provider hands both to libtorch instead).
     */
    @ParameterizedTest
    @EnumSource(value = NsAlgorithm.class, names = {"GEMM", "GRAM"})
    void constructingWithAnAlgorithmTheKernelsDoNotRun_isRejected(NsAlgorithm algorithm) {
        try (PointerScope scope = new PointerScope()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new CudaNewtonSchulz(BF16.withNsAlgorithm(algorithm),
                            new Device(torch.DeviceType.CUDA, (byte) 0)));
            assertEquals("nsAlgorithm must be AUTO or SYMMETRIC for CudaNewtonSchulz, whose kernels run the "
                    + "symmetric products (GEMM asks for plain products and GRAM for another iteration: NewtonSchulz "
                    + "runs both), got " + algorithm, e.getMessage());
            assertTrue(new CudaOrthogonalizerProvider().create(BF16.withNsAlgorithm(algorithm),
                    new Device(torch.DeviceType.CUDA, (byte) 0)).isEmpty(), "the provider declines it");
        }
    }

    @Test
    void constructingWithoutCuda_failsWithTheCause() {
        if (CudaSupport.isAvailable()) {
            return;
        }
        try (PointerScope scope = new PointerScope()) {
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> new CudaNewtonSchulz(BF16, new Device(torch.DeviceType.CUDA, (byte) 0)));
            assertEquals(CudaSupport.unavailabilityCause(), e.getCause());
        }
    }

    @Test
    void libtorchNewtonSchulz_stillServesCpuTensors() {
        // What muon-core falls back to when the provider declines: a sanity check that the module's test class
        // path runs libtorch (CPU natives) at all.
        try (PointerScope scope = new PointerScope()) {
            var x = torch.randn(new long[]{16, 32});
            var o = new NewtonSchulz(NewtonSchulzConfig.defaults()).orthogonalize(x);
            assertEquals(16, o.size(0));
            assertEquals(32, o.size(1));
        }
    }
}
