package dev.muon;

import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.Orthogonalizer;
import dev.muon.orthogonalize.OrthogonalizerProvider;
import dev.muon.orthogonalize.SvdPolarFactor;
import org.bytedeco.pytorch.Device;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * Picks the orthogonalizer for each (settings, device) pair and shares it, so that parameters of the same shape
 * share its workspaces. Device-specific providers (muon-cuda) come from {@link ServiceLoader}; without one,
 * libtorch's ops serve every device.
 */
final class OrthogonalizerSelection {
    private static final System.Logger LOG = System.getLogger(OrthogonalizerSelection.class.getName());
    private static volatile boolean fallbackLogged;

    private final List<OrthogonalizerProvider> providers;
    private final Map<String, Orthogonalizer> chosen = new HashMap<>();
    private final SvdPolarFactor exact = new SvdPolarFactor();

    OrthogonalizerSelection() {
        providers = ServiceLoader.load(OrthogonalizerProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .collect(Collectors.toList());
    }

    Orthogonalizer forParameter(MuonConfig config, Device device) {
        if (device.is_cpu()) {
            ThreadPoolAdvice.warnOnceForThisProcess();
        }
        if (UpdateRecipe.of(config).orthogonalizer() == UpdateRecipe.Orthogonalizer.EXACT_SVD) {
            return exact;
        }
        NewtonSchulzConfig ns = config.newtonSchulz();
        String key = ns + "@" + device.type() + ":" + device.index();
        return chosen.computeIfAbsent(key, k -> create(ns, device));
    }

    private Orthogonalizer create(NewtonSchulzConfig ns, Device device) {
        for (OrthogonalizerProvider provider : providers) {
            Optional<Orthogonalizer> served = provider.create(ns, device);
            if (served.isPresent()) {
                return served.get();
            }
        }
        if (device.is_cuda() && !fallbackLogged) {
            fallbackLogged = true;
            LOG.log(System.Logger.Level.INFO, providers.isEmpty()
                    ? "Muon: CUDA parameters use libtorch's Newton-Schulz; add dev.muon:muon-cuda to the class "
                    + "path for the symmetric kernels"
                    : "Muon: no orthogonalizer provider serves " + device.str().getString()
                    + "; using libtorch's Newton-Schulz");
        }
        return new NewtonSchulz(ns);
    }
}
