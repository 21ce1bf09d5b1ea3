package dev.muon;

import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Clips the global gradient norm over all of an optimizer's parameters, before its step: PyTorch's
 * {@code torch.nn.utils.clip_grad_norm_(params, max_norm)} with the 2-norm.
 * <pre>
 *   total = sqrt(Σ_p ‖g_p‖²)                        every parameter with a gradient, both groups of MuonAdamW
 *   coef  = min(maxNorm / (total + 1e-6), 1)       PyTorch's 1e-6
 *   g_p   = coef · g_p                             in place, in each gradient's dtype
 * </pre>
 * and returns {@code total}, the norm before clipping. {@code maxNorm} infinite only measures: it touches no
 * gradient, whatever they hold, under every policy (PyTorch's arithmetic would make them all NaN when the total is
 * not finite).
 *
 * <p><b>Why on the raw gradients.</b> Clipping bounds how far one bad batch can move the weights. Muon's update is
 * the orthogonalized momentum: Newton–Schulz normalizes its input, so the update's size is set by the lr and the
 * matrix's shape, not by the gradient's, and a clipped gradient still gives a full step in a safer direction
 * (through the momentum, it weighs less against the steps before). Clipping the orthogonalized update instead
 * only shrinks every step: an orthogonalized 8192 × 8192 update has singular values near 1, so a Frobenius norm
 * near √8192 ≈ 90, and a norm threshold of 1 on it divided the Muon step by up to 85.6 (DeepSpeed #7713). Call
 * this after the last backward of a step (after all micro-batches are accumulated) and before {@code step()}.
 *
 * <p><b>NaN and Inf.</b> A non-finite total follows the optimizer's {@link NonFinitePolicy}, as its step would:
 * under {@code SKIP} (MuonAdamW's default) the gradients are left as they are and the norm is returned, so that
 * the following {@code step()} skips the step; under {@code RAISE} an {@link IllegalStateException} names the
 * first parameter whose gradient is not finite, and nothing changes; under {@code IGNORE}, and for a
 * {@link Muon} (which has no policy and uses its gradients as they are), PyTorch's arithmetic: a NaN total makes
 * every gradient NaN, an infinite one makes the non-finite entries NaN and the rest 0.
 *
 * <p><b>Distributed.</b> A distributed optimizer that averages the gradients does so inside {@code step()}, after
 * this call would run: clipping each rank's own gradients would clip by another norm on every rank. It is refused
 * there. Average first ({@code GradientAveraging.averageGradients}), then clip, then step an optimizer built with
 * {@code ShardingConfig.withAverageGradients(false)}: every rank holds the same gradients and clips them alike
 * (see {@code docs/distributed.md}, "Gradient accumulation").
 *
 * <pre>{@code
 * optimizer.zeroGrad();
 * loss.backward();
 * double norm = GradientClipping.clipGradNorm(optimizer, 1.0);   // the norm before clipping, for the logs
 * optimizer.step();
 * }</pre>
 */
public final class GradientClipping {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** PyTorch's {@code clip_grad_norm_} adds it to the total before dividing (torch/nn/utils/clip_grad.py). */
    static final double EPS = 1e-6;

    private GradientClipping() {
    }

    /**
     * Clips the gradients of every parameter of both groups (a tied weight's once) so that their global 2-norm is
     * at most {@code maxNorm}.
     *
     * @param optimizer the optimizer whose parameters' gradients are clipped
     * @param maxNorm   the largest global norm, {@code > 0}; {@code Double.POSITIVE_INFINITY} measures only
     * @return the global norm before clipping (NaN or infinite when a gradient is)
     * @throws IllegalArgumentException      if {@code maxNorm} is not {@code > 0}
     * @throws IllegalStateException         under {@link NonFinitePolicy#RAISE} if a gradient holds NaN or Inf;
     *                                       if a gradient's shape, dtype or device differs from its parameter's;
     *                                       if the optimizer is distributed and averages the gradients in its
     *                                       step; nothing changes then
     * @throws UnsupportedOperationException if a gradient is sparse or complex; nothing changes
     */
    public static double clipGradNorm(MuonAdamW optimizer, double maxNorm) {
        Objects.requireNonNull(optimizer, "optimizer must not be null");
        checkMaxNorm(maxNorm);
        requireLocalGradients(optimizer.averagesGradients(), "MuonAdamW");
        List<String> names = new ArrayList<>();
        List<Tensor> params = new ArrayList<>();
        for (Assignment.Decision d : optimizer.assignment().decisions()) {
            if (!d.isAlias()) {
                names.add("parameter '" + d.name() + "'");
                params.add(d.tensor());
            }
        }
        return clip(names, params, maxNorm, optimizer.nonFinitePolicy(), "MuonAdamW");
    }

    /**
     * Clips the gradients of every parameter of every group so that their global 2-norm is at most
     * {@code maxNorm}; a non-finite norm is PyTorch's ({@link NonFinitePolicy#IGNORE}), as {@link Muon#step()}
     * uses its gradients as they are.
     *
     * @param optimizer the optimizer whose parameters' gradients are clipped
     * @param maxNorm   the largest global norm, {@code > 0}; {@code Double.POSITIVE_INFINITY} measures only
     * @return the global norm before clipping (NaN or infinite when a gradient is)
     * @throws IllegalArgumentException      if {@code maxNorm} is not {@code > 0}
     * @throws IllegalStateException         if a gradient's shape, dtype or device differs from its parameter's,
     *                                       or the optimizer is distributed and averages the gradients in its
     *                                       step; nothing changes then
     * @throws UnsupportedOperationException if a gradient is sparse or complex; nothing changes
     */
    public static double clipGradNorm(Muon optimizer, double maxNorm) {
        Objects.requireNonNull(optimizer, "optimizer must not be null");
        checkMaxNorm(maxNorm);
        requireLocalGradients(optimizer.averagesGradients(), "Muon");
        return clip(optimizer.labels(), optimizer.params(), maxNorm, NonFinitePolicy.IGNORE, "Muon");
    }

    private static void checkMaxNorm(double maxNorm) {
        if (!(maxNorm > 0)) {
            throw new IllegalArgumentException("maxNorm must be > 0, got " + maxNorm);
        }
    }

    private static void requireLocalGradients(boolean averaged, String optimizer) {
        if (averaged) {
            throw new IllegalStateException("GradientClipping.clipGradNorm: this " + optimizer + " averages the "
                    + "gradients over its ranks inside step(), after clipping would run, so each rank would clip "
                    + "by the norm of its own gradients; build it with ShardingConfig.withAverageGradients(false) "
                    + "and give every rank the averaged gradients before clipping (docs/distributed.md)");
        }
    }

    /** Checks every gradient, measures the total, then clips: nothing changes unless every check passed. */
    private static double clip(List<String> names, List<Tensor> params, double maxNorm, NonFinitePolicy policy,
                               String optimizer) {
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            List<Tensor> grads = new ArrayList<>();
            List<String> owners = new ArrayList<>();
            for (int i = 0; i < params.size(); i++) {
                Tensor grad = GradientCheck.usable(params.get(i), optimizer, names.get(i));
                if (grad != null && grad.numel() > 0) {
                    grads.add(grad);
                    owners.add(names.get(i));
                }
            }
            double total = totalNorm(grads);
            if (maxNorm == Double.POSITIVE_INFINITY) {
                // Only measures, whatever the gradients hold: PyTorch's ∞/∞ would make every gradient NaN.
                return total;
            }
            if (!Double.isFinite(total) && policy != NonFinitePolicy.IGNORE) {
                if (policy == NonFinitePolicy.RAISE) {
                    for (int i = 0; i < grads.size(); i++) {
                        if (NonFiniteScan.hasNonFinite(grads.get(i))) {
                            throw new IllegalStateException("the gradient of " + owners.get(i) + " holds NaN or Inf "
                                    + "(nonFinitePolicy RAISE); GradientClipping.clipGradNorm changed nothing");
                        }
                    }
                }
                // SKIP: the step that follows skips; its gradients are the user's, as they were.
                return total;
            }
            // Math.min keeps a NaN, as PyTorch's clamp does: every gradient becomes NaN, as there.
            double coef = Math.min(maxNorm / (total + EPS), 1.0);
            if (!(coef == 1.0)) {
                Scalar factor = new Scalar(coef);
                for (Tensor grad : grads) {
                    grad.mul_(factor);
                }
            }
            return total;
        }
    }

    /**
     * {@code sqrt(Σ ‖g‖²)}: each gradient's 2-norm in its own dtype (as PyTorch's), then the norms together in
     * float64, read with one synchronisation per device.
     */
    private static double totalNorm(List<Tensor> grads) {
        if (grads.isEmpty()) {
            return 0.0;
        }
        TensorVector norms = new TensorVector();
        for (Tensor grad : grads) {
            norms.push_back(torch.linalg_vector_norm(grad).to(torch.ScalarType.Double));
        }
        Tensor first = norms.get(0);
        boolean oneDevice = true;
        for (long i = 1; i < norms.size(); i++) {
            oneDevice &= norms.get(i).device().equals(first.device());
        }
        if (oneDevice) {
            return torch.stack(norms).square().sum().sqrt().item_double();
        }
        double sum = 0;
        for (long i = 0; i < norms.size(); i++) {
            double n = norms.get(i).item_double();
            sum += n * n;
        }
        return Math.sqrt(sum);
    }
}
