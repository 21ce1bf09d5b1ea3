package dev.muon.cuda;

import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Skips each test of a GPU test class where the CUDA kernels cannot run, saying why
 * ({@link CudaSupport#unavailabilityCause()}), so that a CPU-only log shows the reason the GPU tests skip.
 */
final class RequireCuda implements BeforeEachCallback {
    @Override
    public void beforeEach(ExtensionContext context) {
        assumeTrue(CudaSupport.isAvailable(), () -> "CUDA kernels unavailable: "
                + CudaSupport.unavailabilityCause().getMessage());
    }
}
