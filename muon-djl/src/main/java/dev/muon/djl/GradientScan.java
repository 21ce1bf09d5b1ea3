package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.DataType;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Whether gradients are all finite, as muon-core's {@code NonFiniteScan} decides it: a gradient is finite exactly
 * when its minimum and maximum are (both propagate NaN, and an infinity is itself an extreme), so each gradient is
 * read once by two reductions and the extremes of all gradients on a device are checked in one host
 * synchronisation. The extremes are widened to float64, which holds every float16, float32 and float64 value.
 */
final class GradientScan {
    private GradientScan() {
    }

    /**
     * Whether every element of every gradient is finite.
     *
     * @param grads the gradients; empty ones are skipped
     * @return true when all are finite (also for none)
     */
    static boolean allFinite(Collection<NDArray> grads) {
        try (NDScope scope = new NDScope()) {
            scope.suppressNotUsedWarning();
            Map<Device, NDList> extremes = new LinkedHashMap<>();
            for (NDArray g : grads) {
                if (g.size() == 0) {
                    continue;
                }
                NDList list = extremes.computeIfAbsent(g.getDevice(), d -> new NDList());
                list.add(g.max().toType(DataType.FLOAT64, false));
                list.add(g.min().toType(DataType.FLOAT64, false));
            }
            for (NDList list : extremes.values()) {
                NDArray stacked = NDArrays.stack(list);
                if (stacked.isNaN().logicalOr(stacked.isInfinite()).any().getBoolean()) {
                    return false;
                }
            }
            return true;
        }
    }

    /**
     * Whether one gradient holds a NaN or an infinity.
     *
     * @param grad the gradient
     * @return true if some element is not finite
     */
    static boolean hasNonFinite(NDArray grad) {
        return !allFinite(List.of(grad));
    }
}
