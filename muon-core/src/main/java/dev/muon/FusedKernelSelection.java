package dev.muon;

import dev.muon.internal.FusedUpdateKernels;
import dev.muon.internal.FusedUpdateKernelsProvider;
import dev.muon.internal.SystemSwitch;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * Picks, once per parameter when a {@link Muon} is built, the device's fused momentum and update stages
 * ({@link FusedUpdateKernels}): a provider's (muon-cuda's kernels through {@link ServiceLoader}) first, else, for a CPU
 * float32 parameter where muon-core's native kernels run, {@link NativeFusedUpdateKernels} (the same bits as libtorch's
 * ops, in fewer passes), or none: then the parameter's momentum and update run on libtorch's ops. Only
 * Newton–Schulz parameters are offered: the exact SVD reference keeps libtorch's ops.
 */
final class FusedKernelSelection {
    private static final System.Logger LOG = System.getLogger(FusedKernelSelection.class.getName());
    private static volatile boolean fallbackLogged;

    /**
     * Set to {@code true} when an optimizer is built, keeps its CPU parameters' momentum and update on libtorch's
     * ops (the native stages give the same bits; this is for measuring them, and for ruling them out).
     */
    static final String DISABLE_NATIVE_STAGES_PROPERTY = "dev.muon.native.disableUpdateStages";

    private final List<FusedUpdateKernelsProvider> providers;
    /** The CPU's native stages, looked up at the first CPU parameter they would serve; null where none run. */
    private NativeFusedUpdateKernels cpu;
    private boolean cpuLookedUp;

    FusedKernelSelection() {
        providers = ServiceLoader.load(FusedUpdateKernelsProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .collect(Collectors.toList());
    }

    /**
     * The stages of the first provider that serves this parameter, else the CPU's native stages where they serve it,
     * or null for libtorch's ops.
     */
    FusedUpdateKernels forParameter(MuonConfig config, Tensor matrix, String label) {
        if (UpdateRecipe.of(config).orthogonalizer() != UpdateRecipe.Orthogonalizer.NEWTON_SCHULZ) {
            return null;
        }
        ScalarType updateType = config.nsPrecision().scalarType();
        for (FusedUpdateKernelsProvider provider : providers) {
            Optional<FusedUpdateKernels> served = provider.forParameter(matrix, updateType);
            if (served.isPresent()) {
                return served.get();
            }
        }
        if (NativeFusedUpdateKernels.serves(matrix, updateType)) {
            if (!cpuLookedUp) {
                cpu = SystemSwitch.isOn(DISABLE_NATIVE_STAGES_PROPERTY) ? null
                        : NativeFusedUpdateKernels.ifAvailable();
                cpuLookedUp = true;
            }
            if (cpu != null) {
                return cpu;
            }
        }
        if (matrix.is_cuda() && !fallbackLogged) {
            fallbackLogged = true;
            LOG.log(System.Logger.Level.INFO, fallbackMessage(!providers.isEmpty(), label, matrix.scalar_type(),
                    matrix.is_contiguous(), config.nsPrecision().name()));
        }
        return null;
    }

    /** The one sentence logged, once per JVM, when a CUDA parameter keeps libtorch's momentum and update ops. */
    static String fallbackMessage(boolean providerPresent, String label, ScalarType dtype, boolean contiguous,
                                  String nsPrecision) {
        if (!providerPresent) {
            return "Muon: CUDA parameters use libtorch's momentum and update ops; add dev.muon:muon-cuda to the "
                    + "class path for the fused kernels";
        }
        return "Muon: " + label + " (" + dtype + (contiguous ? "" : ", not contiguous") + ", nsPrecision "
                + nsPrecision + ") uses libtorch's momentum and update ops: the fused kernels take contiguous "
                + "float32 parameters with nsPrecision BFLOAT16 on an available CUDA device";
    }
}
