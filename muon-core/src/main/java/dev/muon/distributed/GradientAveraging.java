package dev.muon.distributed;

import dev.muon.internal.NamedParameters;
import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Averages gradients over a group, for training loops without a DDP of their own (libtorch's C++ API has none):
 * the gradients of each dtype are summed in one coalesced all-reduce and divided by the world size in place. The
 * distributed optimizers call it themselves; any other optimizer can use it between {@code backward()} and
 * {@code step()}:
 *
 * <pre>{@code
 * loss.backward();
 * GradientAveraging.averageGradients(group, model.named_parameters());
 * adamW.step();
 * }</pre>
 *
 * <p>First, one small all-reduce checks that every rank has a gradient for the same parameters: a parameter with
 * a gradient on some ranks only cannot be averaged, and would otherwise leave the ranks' collectives out of step.
 * Every rank must call it with the same parameters in the same order.
 */
public final class GradientAveraging {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private GradientAveraging() {
    }

    /**
     * Averages the defined gradients of a module's parameters over the group.
     *
     * @param group           the group this process has joined
     * @param namedParameters {@code module.named_parameters()}, the same names in the same order on every rank
     * @throws IllegalStateException if the ranks disagree on which parameters have gradients, a gradient is not
     *                               contiguous, or a peer fails
     */
    public static void averageGradients(DistributedGroup group, StringTensorDict namedParameters) {
        Map<String, Tensor> named = NamedParameters.ordered(namedParameters);
        averageGradients(group, new ArrayList<>(named.keySet()), new ArrayList<>(named.values()));
    }

    /**
     * Averages the defined gradients of {@code params} over the group.
     *
     * @param group  the group this process has joined
     * @param names  the parameters' names, for messages
     * @param params the parameters, the same ones in the same order on every rank
     * @throws IllegalArgumentException if the lists differ in length
     * @throws IllegalStateException    if the ranks disagree on which parameters have gradients, a gradient is not
     *                                  contiguous on any rank (every rank refuses, before any gradient changes), or
     *                                  a peer fails
     */
    public static void averageGradients(DistributedGroup group, List<String> names, List<Tensor> params) {
        Objects.requireNonNull(group, "group must not be null");
        if (names.size() != params.size()) {
            throw new IllegalArgumentException("names must hold one name per parameter (" + params.size()
                    + "), got " + names.size());
        }
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            average(group, names, params);
        }
    }

    private static void average(DistributedGroup group, List<String> names, List<Tensor> params) {
        int n = params.size();
        // One entry per parameter (has a gradient here), and a last one: this rank holds a gradient that is not
        // contiguous. Every rank learns both before any gradient changes, so that all refuse together.
        long[] present = new long[n + 1];
        Map<Byte, List<Tensor>> byDtype = new LinkedHashMap<>();
        int notContiguous = -1;
        for (int i = 0; i < n; i++) {
            Tensor grad = params.get(i).grad();
            if (grad.defined()) {
                present[i] = 1;
                byDtype.computeIfAbsent(grad.scalar_type().value, k -> new ArrayList<>()).add(grad);
                if (notContiguous < 0 && !grad.is_contiguous()) {
                    notContiguous = i;
                }
            }
        }
        present[n] = notContiguous < 0 ? 0 : 1;
        long[] counts = group.allReduceSum(present, "the gradient-presence mask");
        int world = group.worldSize();
        if (counts[n] != 0) {
            if (notContiguous >= 0) {
                Tensor g = params.get(notContiguous).grad();
                throw new IllegalStateException("the gradient of parameter '" + names.get(notContiguous) + "' must "
                        + "be contiguous for gradient averaging, got shape " + Arrays.toString(g.shape())
                        + " with strides " + Arrays.toString(g.strides().vec().get()) + "; no gradient was changed");
            }
            throw new IllegalStateException(counts[n] + " of " + world + " ranks hold a gradient that is not "
                    + "contiguous (see their error), so rank " + group.rank() + " stops too; no gradient was changed");
        }
        for (int i = 0; i < n; i++) {
            if (counts[i] != 0 && counts[i] != world) {
                throw new IllegalStateException("parameter '" + names.get(i) + "' has a gradient on " + counts[i]
                        + " of " + world + " ranks; gradient averaging needs it on all ranks or on none (run the "
                        + "same forward and backward on every rank)");
            }
        }
        Scalar divisor = new Scalar((double) world);
        for (List<Tensor> grads : byDtype.values()) {
            group.allReduceSum(grads, grads.size() + " gradients");
            for (Tensor g : grads) {
                g.div_(divisor);
            }
        }
    }
}
