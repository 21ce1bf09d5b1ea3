package dev.muon.orthogonalize;

import org.bytedeco.pytorch.Tensor;

/**
 * Maps a matrix (or a batch of matrices) to an approximately semi-orthogonal one with the same singular vectors:
 * {@code G = U S Vᵀ  ->  U S' Vᵀ} with {@code S'} near 1.
 *
 * <p>This is the one extension point of the optimizer: {@link NewtonSchulz} is the portable implementation,
 * {@link SvdPolarFactor} the exact reference, and {@code muon-cuda} plugs in its kernels through
 * {@link OrthogonalizerProvider}.
 *
 * <p><b>Result lifetime.</b> To keep {@code step()} free of allocations, an implementation may return a view of
 * a workspace that it owns. The result stays valid until the next call on the same instance; clone it to keep
 * it longer. Implementations are not required to be thread-safe.
 */
@FunctionalInterface
public interface Orthogonalizer {

    /**
     * Orthogonalizes {@code update}.
     *
     * @param update a floating-point tensor of shape {@code [rows, cols]} or {@code [batch, rows, cols]}; it is
     *               read, never written
     * @return a tensor of the same shape (its dtype is the implementation's working precision)
     * @throws IllegalArgumentException      if {@code update} is not 2-D or 3-D, or not floating point
     * @throws UnsupportedOperationException if {@code update} is sparse or complex
     */
    Tensor orthogonalize(Tensor update);
}
