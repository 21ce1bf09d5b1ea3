package dev.muon.internal;

import org.bytedeco.pytorch.Tensor;

/**
 * The two memory-bound stages of a Muon step around the orthogonalization that a device may take over, one call at
 * a time, while {@code dev.muon.Muon} runs the step and does every declined call on libtorch ops:
 * <pre>
 *   momentum: B = lerp(B, g, 1 − μ);  U = nesterov ? lerp(g, B, μ) : B;  out = U in out's dtype
 *   update:   p = decay·p + alpha·O
 * </pre>
 *
 * <p>Who may use it: {@code muon-cuda} of the same version as {@code muon-core} (its fused kernels), registered
 * through {@link FusedUpdateKernelsProvider}. Not user API and no compatibility promise (see this package): the stages
 * must reproduce Muon's own formulas, so they are not a place for a user's variant of the optimizer.
 *
 * <p>The contract, for both stages:
 * <ul>
 *   <li>Return {@code true} after doing the whole stage, or {@code false} having written nothing; a declined call
 *       runs on libtorch ops, so declining is always correct. Decline what is not served (a layout, an alignment)
 *       rather than throw.</li>
 *   <li>Write only the tensors the stage names as written; keep no reference to any argument.</li>
 *   <li>Muon calls a stage only for the parameter it was selected for: the parameter's matrix view, its gradient
 *       and momentum buffer in that view, and {@code out} or {@code update} in the update dtype it was selected
 *       with. Other properties (contiguity, alignment) are the stage's to check on every call.</li>
 *   <li>A stage that computes differently from libtorch's ops changes the result by its own rounding; the
 *       implementation documents and tests that difference.</li>
 * </ul>
 */
public interface FusedUpdateKernels {
    /**
     * The momentum stage: advances {@code buffer} and writes the update {@code U} into {@code out}.
     *
     * @param out      written: {@code U}, in the update dtype, the parameter's matrix shape
     * @param buffer   read and written: the momentum buffer {@code B}, the parameter's dtype and matrix shape
     * @param grad     read only: the gradient {@code g}, the parameter's dtype and matrix shape
     * @param momentum {@code μ}, in {@code [0, 1)}
     * @param nesterov whether {@code U} is the Nesterov look-ahead {@code lerp(g, B, μ)} or {@code B}
     * @return whether this stage updated {@code buffer} and wrote {@code out}
     */
    boolean momentumInto(Tensor out, Tensor buffer, Tensor grad, double momentum, boolean nesterov);

    /**
     * The parameter update stage: {@code param = decay·param + alpha·update}, decoupled weight decay and the
     * scaled, signed step in one.
     *
     * @param param  read and written: the parameter's matrix view
     * @param update read only: the orthogonalized update {@code O}, the orthogonalizer's dtype, the same shape
     * @param decay  {@code 1 − lr·weightDecay} (exactly 1 without weight decay)
     * @param alpha  {@code −lr·ratio·extraScale}
     * @return whether this stage updated {@code param}
     */
    boolean updateParameter(Tensor param, Tensor update, double decay, double alpha);
}
