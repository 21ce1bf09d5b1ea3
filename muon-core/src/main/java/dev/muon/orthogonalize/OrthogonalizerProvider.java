package dev.muon.orthogonalize;

import org.bytedeco.pytorch.Device;

import java.util.Optional;

/**
 * A service ({@link java.util.ServiceLoader}) that supplies device-specific orthogonalizers, such as the CUDA
 * kernels of {@code muon-cuda}. {@code muon-core} never references an implementation: putting the jar on the
 * class path is enough.
 */
public interface OrthogonalizerProvider {

    /**
     * An orthogonalizer for tensors on {@code device} with these settings, or empty if this provider does not
     * serve that device or cannot run here (it then logs why, once).
     *
     * @param config the Newton–Schulz settings to honour
     * @param device the device of the parameters
     * @return the orthogonalizer, if this provider serves the device
     */
    Optional<Orthogonalizer> create(NewtonSchulzConfig config, Device device);
}
