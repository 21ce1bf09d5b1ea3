package dev.muon;

import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Parameters' values copied aside in their map's order, for the resume tests: to put back before a second run, and
 * to hold a resumed run against the straight one, bit for bit.
 */
record ParameterSnapshot(List<Tensor> values) {
    static ParameterSnapshot of(Map<String, Tensor> named) {
        List<Tensor> values = new ArrayList<>();
        named.values().forEach(p -> values.add(p.detach().clone()));
        return new ParameterSnapshot(values);
    }

    /** Copies the values into {@code named}'s parameters, outside autograd. */
    void copyInto(Map<String, Tensor> named) {
        try (NoGradGuard noGrad = new NoGradGuard()) {
            int i = 0;
            for (Tensor p : named.values()) {
                p.copy_(values.get(i++));
            }
        }
    }

    /** Every parameter of {@code resumed} equals its value here, bit for bit. */
    void assertEqualToResumed(Map<String, Tensor> resumed) {
        int i = 0;
        for (Map.Entry<String, Tensor> e : resumed.entrySet()) {
            assertTrue(e.getValue().equal(values.get(i++)), e.getKey() + " differs from the straight run");
        }
    }
}
