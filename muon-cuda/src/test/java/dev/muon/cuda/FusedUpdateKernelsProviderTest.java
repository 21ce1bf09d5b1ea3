package dev.muon.cuda;

import dev.muon.cuda.internal.CudaFusedUpdateKernelsProvider;
import dev.muon.internal.FusedUpdateKernelsProvider;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ServiceLoader registration of the fused update stages and the decisions that need no GPU. */
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
class FusedUpdateKernelsProviderTest {

    @Test
    void serviceLoader_findsTheFusedUpdateProvider() {
        List<String> names = ServiceLoader.load(FusedUpdateKernelsProvider.class).stream()
                .map(p -> p.type().getName()).collect(Collectors.toList());
        assertTrue(names.contains(CudaFusedUpdateKernelsProvider.class.getName()), names.toString());
    }

    @Test
    void cpuParameter_isNotServed() {
        try (PointerScope scope = new PointerScope()) {
            assertTrue(new CudaFusedUpdateKernelsProvider().forParameter(torch.zeros(8, 4), ScalarType.BFloat16)
                    .isEmpty());
        }
    }
}
