package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The one-pass non-finite check against every place a NaN or infinity can hide. */
@ExtendWith(NativeScopePerTest.class)
class NonFiniteScanTest {
    static Stream<Arguments> poisoned() {
        List<Arguments> cases = new ArrayList<>();
        for (ScalarType type : new ScalarType[]{ScalarType.Float, ScalarType.BFloat16, ScalarType.Double,
                ScalarType.Half}) {
            for (double bad : new double[]{Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY}) {
                for (int position : new int[]{0, 1234, 4095}) {
                    cases.add(Arguments.of(type, bad, position));
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0}: {1} at {2}")
    @MethodSource("poisoned")
    void oneBadElement_inOneOfSeveralGradients_isFound(ScalarType type, double bad, int position) {
        List<Tensor> grads = new ArrayList<>();
        grads.add(torch.randn(10, 3).to(type));
        Tensor poisoned = torch.randn(64, 64).to(type);
        poisoned.view(-1).select(0, position).fill_(new Scalar(bad));
        grads.add(poisoned);
        grads.add(torch.randn(7).to(type));
        assertFalse(NonFiniteScan.allFinite(grads));
        assertTrue(NonFiniteScan.hasNonFinite(poisoned));
    }

    @Test
    void finiteExtremes_emptyAndUndefinedGradients_andMixedDtypes_areFinite() {
        Tensor huge = torch.full(new long[]{3, 3}, new Scalar(Float.MAX_VALUE));
        Tensor tiny = torch.full(new long[]{3}, new Scalar(-Float.MAX_VALUE));
        Tensor empty = torch.empty(new long[]{0, 5});
        List<Tensor> grads = new ArrayList<>(List.of(huge, tiny, empty, new Tensor(),
                torch.randn(4, 4).to(ScalarType.BFloat16), torch.randn(2).to(ScalarType.Double)));
        grads.add(null);
        assertTrue(NonFiniteScan.allFinite(grads));
        assertTrue(NonFiniteScan.allFinite(List.of()));
        assertFalse(NonFiniteScan.hasNonFinite(empty));
    }

    @Test
    void mixedDtypes_withOneBadGradient_isNotFinite() {
        Tensor bad = torch.randn(5, 5).to(ScalarType.Double);
        bad.view(-1).select(0, 24).fill_(new Scalar(Double.NaN));
        assertFalse(NonFiniteScan.allFinite(List.of(torch.randn(3, 3).to(ScalarType.BFloat16), bad)));
    }
}
