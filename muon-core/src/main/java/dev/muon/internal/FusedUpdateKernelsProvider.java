package dev.muon.internal;

import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Optional;

/**
 * A service ({@link java.util.ServiceLoader}) that supplies a device's {@link FusedUpdateKernels}, such as the fused
 * kernels of {@code muon-cuda}. {@code dev.muon.Muon} asks the providers once per parameter, when it is built; a
 * parameter no provider serves runs its momentum and update on libtorch ops. Not user API (see this package).
 */
public interface FusedUpdateKernelsProvider {

    /**
     * The stages for one parameter, or empty if this provider does not serve its device, dtype or layout, or the
     * update dtype; an instance may be shared by every parameter it serves.
     *
     * @param matrix     the parameter's matrix view ({@code rows × cols}, or a stack {@code [batch, rows, cols]})
     * @param updateType the dtype of {@code U} and {@code O}: the Newton–Schulz iteration's ({@code nsPrecision})
     * @return the stages, if this provider serves the parameter
     */
    Optional<FusedUpdateKernels> forParameter(Tensor matrix, ScalarType updateType);
}
