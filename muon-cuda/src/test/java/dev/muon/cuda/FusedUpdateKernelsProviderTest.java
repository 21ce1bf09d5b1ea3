package dev.muon.cuda;

import dev.muon.cuda.internal.CudaFusedUpdateKernelsProvider;
import dev.muon.internal.FusedUpdateKernelsProvider;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ServiceLoader registration of the fused update stages and the decisions that need no GPU. */
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
class FusedUpdateKernelsProviderTest {

    @Test
    void serviceLoader_findsTheFusedUpdateProvider() {
        ServiceRegistrations.assertFound(FusedUpdateKernelsProvider.class, CudaFusedUpdateKernelsProvider.class);
    }

    @Test
    void cpuParameter_isNotServed() {
        try (PointerScope scope = new PointerScope()) {
            assertTrue(new CudaFusedUpdateKernelsProvider().forParameter(torch.zeros(8, 4), ScalarType.BFloat16)
                    .isEmpty());
        }
    }
}
