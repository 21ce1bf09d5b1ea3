package dev.muon;

import dev.muon.distributed.DistributedGroup;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Averages gradients over a group, for training loops without a DDP of their own: the gradients of each dtype
 * are summed in one coalesced all-reduce and divided by the world size in place.
 *
 * <p>First, one small all-reduce checks that every rank has a gradient for the same parameters: a parameter with
 * a gradient on some ranks only cannot be averaged, and would otherwise leave the ranks' collectives out of step.
 */
final class GradientAveraging {
    private GradientAveraging() {
    }

    /**
     * Averages the defined gradients of {@code params} over the group.
     *
     * @throws IllegalStateException if the ranks disagree on which parameters have gradients, or a peer fails
     */
    static void average(DistributedGroup group, List<String> names, List<Tensor> params) {
        int n = params.size();
        long[] present = new long[n];
        Map<Byte, List<Tensor>> byDtype = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            Tensor grad = params.get(i).grad();
            if (grad.defined()) {
                present[i] = 1;
                byDtype.computeIfAbsent(grad.scalar_type().value, k -> new ArrayList<>()).add(grad);
            }
        }
        long[] counts = group.allReduceSum(present, "the gradient-presence mask");
        int world = group.worldSize();
        for (int i = 0; i < n; i++) {
            if (counts[i] != 0 && counts[i] != world) {
                throw new IllegalStateException("parameter '" + names.get(i) + "' has a gradient on " + counts[i]
                        + " of " + world + " ranks; gradient averaging needs it on all ranks or on none (run the "
                        + "same forward and backward on every rank)");
            }
        }
        Scalar divisor = new Scalar((double) world);
        for (List<Tensor> grads : byDtype.values()) {
            for (Tensor g : grads) {
                if (!g.is_contiguous()) {
                    throw new IllegalStateException("gradient averaging needs contiguous gradients; one of shape "
                            + java.util.Arrays.toString(g.shape()) + " is not");
                }
            }
            group.allReduceSum(grads, grads.size() + " gradients");
            for (Tensor g : grads) {
                g.div_(divisor);
            }
        }
    }
}
