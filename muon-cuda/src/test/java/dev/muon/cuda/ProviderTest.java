package dev.muon.cuda;

import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import dev.muon.orthogonalize.OrthogonalizerProvider;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ServiceLoader registration and the fallback decisions that need no GPU. */
// PointerScope and CUDAGuard work by existing: their try blocks never name them.
@SuppressWarnings("try")
class ProviderTest {
    private static final NewtonSchulzConfig BF16 = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16);

    @Test
    void serviceLoader_findsTheCudaProvider() {
        ServiceRegistrations.assertFound(OrthogonalizerProvider.class, CudaOrthogonalizerProvider.class);
    }

    @Test
    void cpuDevice_isNotServed() {
        try (PointerScope scope = new PointerScope()) {
            Optional<Orthogonalizer> o = new CudaOrthogonalizerProvider().create(BF16, new Device(torch.DeviceType.CPU));
            assertTrue(o.isEmpty());
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
