package dev.muon.internal;

import org.bytedeco.pytorch.Tensor;

/**
 * The stages of Newton–Schulz's plain iteration that a device-specific orthogonalizer may take over, one call at
 * a time, while {@code dev.muon.orthogonalize.NewtonSchulz} runs the loop, owns the workspace and does every
 * stage that is declined on libtorch ops.
 *
 * <p>Who may use it: {@code muon-cuda} of the same version as {@code muon-core}, through
 * {@link NewtonSchulzAccess#orthogonalizeWith}. Not user API and no compatibility promise (see this package); a
 * user's own orthogonalizer implements {@code Orthogonalizer} and registers an {@code OrthogonalizerProvider} instead.
 *
 * <p>The contract, for every stage:
 * <ul>
 *   <li>Return {@code true} after writing {@code out} completely, or {@code false} having written nothing; a
 *       declined stage runs on libtorch ops, so declining is always correct.</li>
 *   <li>Write {@code out} only: every other argument is read only. The tensors are workspace buffers (or the
 *       caller's input) that live beyond the call; keep no reference to them.</li>
 *   <li>Shapes use {@code m <= n}: a tall input is iterated as its transpose. A batch adds a leading dimension
 *       to every tensor. Workspace buffers are contiguous and have the iteration's dtype
 *       ({@code nsPrecision}).</li>
 *   <li>Coefficients, {@code eps} and the normalisation safety come from the {@code NewtonSchulzConfig} that the
 *       implementation was built with, which must be the one of the {@code NewtonSchulz} it is handed to.</li>
 *   <li>A stage that computes differently from libtorch's changes the result by its own rounding; the
 *       implementation documents and tests that difference.</li>
 * </ul>
 */
public interface NewtonSchulzKernels {
    /**
     * The normalisation: writes {@code X = G / max(s·‖G‖_F, eps)} into {@code out}, the norm taken per matrix,
     * and {@code G} transposed when the input is tall ({@code rows > cols}).
     *
     * @param out    the iterate {@code X}, {@code [batch,] m × n}
     * @param update the caller's input as it was passed, {@code [batch,] rows × cols}, any float dtype and layout
     * @return whether this stage wrote {@code out}
     */
    boolean normalizeInto(Tensor out, Tensor update);

    /**
     * The Gram product of one step: writes {@code A = X·Xᵀ} into {@code out}.
     *
     * @param out the Gram matrix {@code A}, {@code [batch,] m × m}
     * @param x   the iterate {@code X}, {@code [batch,] m × n}
     * @return whether this stage wrote {@code out}
     */
    boolean gramInto(Tensor out, Tensor x);

    /**
     * The polynomial of step {@code step}, with that step's coefficients {@code (a, b, c)}: writes
     * {@code B = a·I + b·A + c·A²} into {@code out}.
     *
     * @param out  the polynomial {@code B}, {@code [batch,] m × m}
     * @param gram the Gram matrix {@code A} of this step, same shape
     * @param step the zero-based step, which selects the coefficients
     * @return whether this stage wrote {@code out}
     */
    boolean polynomialInto(Tensor out, Tensor gram, int step);
}
