package dev.muon.cuda;

import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import dev.muon.orthogonalize.OrthogonalizerProvider;
import org.bytedeco.pytorch.Device;

import java.util.Optional;

/**
 * Registers {@link CudaNewtonSchulz} with muon-core through {@link java.util.ServiceLoader}
 * ({@code META-INF/services/dev.muon.orthogonalize.OrthogonalizerProvider}): with muon-cuda on the class path,
 * Muon uses the kernels for CUDA parameters with no change to user code.
 *
 * <p>It serves CUDA devices when {@link CudaSupport#isAvailable()} and the settings ask for bfloat16
 * iterations (the kernels' precision) with {@code nsAlgorithm} AUTO or SYMMETRIC, with either preconditioning (with
 * AOL the kernels form the products and muon-core's rescaling runs between them); otherwise it returns empty, muon-core uses libtorch's
 * {@code NewtonSchulz}, and the reason is logged once.
 */
public final class CudaOrthogonalizerProvider implements OrthogonalizerProvider {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** Called by {@link java.util.ServiceLoader}. */
    public CudaOrthogonalizerProvider() {
    }

    /**
     * A {@link CudaNewtonSchulz} for a CUDA device, if the kernels can run and the settings are bfloat16.
     *
     * @param config the Newton–Schulz settings
     * @param device the parameters' device
     * @return the orthogonalizer, or empty for other devices, other precisions or algorithms, or when CUDA is
     *         unavailable
     */
    @Override
    public Optional<Orthogonalizer> create(NewtonSchulzConfig config, Device device) {
        if (device == null || !device.is_cuda()) {
            return Optional.empty();
        }
        if (!CudaSupport.isAvailable()) {
            CudaSupport.logFallbackOnce(CudaSupport.unavailabilityCause().getMessage());
            return Optional.empty();
        }
        if (config.nsPrecision() != NsPrecision.BFLOAT16) {
            CudaSupport.logFallbackOnce("the kernels iterate in bfloat16 and nsPrecision is "
                    + config.nsPrecision() + "; set nsPrecision to BFLOAT16 to use them");
            return Optional.empty();
        }
        if (config.nsAlgorithm() != NsAlgorithm.AUTO && config.nsAlgorithm() != NsAlgorithm.SYMMETRIC) {
            // GEMM asks for plain products and GRAM for another iteration: both are libtorch's to run.
            CudaSupport.logFallbackOnce("nsAlgorithm is " + config.nsAlgorithm()
                    + "; set it to AUTO or SYMMETRIC to use the symmetric kernels");
            return Optional.empty();
        }
        try {
            return Optional.of(new CudaNewtonSchulz(config, device));
        } catch (RuntimeException e) {
            // A driver that refuses the kernels (say, a fatbin with no image for this GPU) must not stop training.
            CudaSupport.logFallbackOnce("loading the kernels on " + device.str().getString() + " failed (" + e.getMessage()
                    + "); run with -D" + CudaSupport.DISABLE_PROPERTY + "=true to skip them");
            return Optional.empty();
        }
    }
}
