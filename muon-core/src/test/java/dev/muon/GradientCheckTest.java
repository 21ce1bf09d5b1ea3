package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Gradients a step must refuse before it changes anything: another dtype (libtorch would promote it, or fail
 * midway naming no parameter), and a sparse gradient on a Muon parameter of {@link MuonAdamW} under
 * {@link NonFinitePolicy#SKIP} (the non-finite scan must not meet it first).
 */
@ExtendWith(NativeScopePerTest.class)
class GradientCheckTest {
    static Stream<Arguments> otherDtypes() {
        return Stream.of(
                Arguments.of(ScalarType.Double, "Double"),
                Arguments.of(ScalarType.Half, "Half"),
                Arguments.of(ScalarType.Long, "Long"));
    }

    /** Muon over [6,4], [5,7], [6,4]; two good steps, then the third parameter's gradient has another dtype. */
    @ParameterizedTest(name = "{1}")
    @MethodSource("otherDtypes")
    void muon_gradientOfAnotherDtype_isRejected_andChangesNothing(ScalarType dtype, String name) {
        List<Tensor> params = List.of(torch.randn(6, 4), torch.randn(5, 7), torch.randn(6, 4));
        Muon muon = Muon.of(params, MuonConfig.defaults().withLr(0.02));
        for (int step = 0; step < 2; step++) {
            for (Tensor p : params) {
                p.mutable_grad().put(torch.randn(p.shape()));
            }
            muon.step();
        }
        for (Tensor p : params) {
            p.mutable_grad().put(torch.randn(p.shape()));
        }
        params.get(2).mutable_grad().put(torch.randn(6, 4).to(dtype));
        List<Tensor> before = snapshot(params, muon);

        IllegalStateException e = assertThrows(IllegalStateException.class, muon::step);
        assertEquals("the gradient of parameter 2 of group 0 has dtype " + name + " but the parameter has dtype "
                + "Float; a gradient must have its parameter's dtype", e.getMessage());
        assertSame(before, snapshot(params, muon));
    }

    static Stream<Arguments> otherDtypeOnEitherGroup() {
        return Stream.of(
                Arguments.of("fc1.weight", ScalarType.Double, "Double"),
                Arguments.of("fc1.weight", ScalarType.Half, "Half"),
                Arguments.of("fc1.bias", ScalarType.Double, "Double"),
                Arguments.of("fc1.bias", ScalarType.Long, "Long"),
                Arguments.of("embed.weight", ScalarType.Double, "Double"));
    }

    @ParameterizedTest(name = "{0} {2}")
    @MethodSource("otherDtypeOnEitherGroup")
    void muonAdamW_gradientOfAnotherDtype_isRejected_andChangesNothing(String param, ScalarType dtype,
                                                                        String dtypeName) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        MuonAdamW opt = NonFinitePolicyTest.trainedOnce(named, NonFinitePolicy.SKIP);
        named.get(param).mutable_grad().put(named.get(param).grad().to(dtype));
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);

        IllegalStateException e = assertThrows(IllegalStateException.class, opt::step);
        assertEquals("the gradient of parameter '" + param + "' has dtype " + dtypeName
                + " but the parameter has dtype Float; a gradient must have its parameter's dtype", e.getMessage());
        assertEquals(1, opt.stepCount());
        assertSameState(before, CheckpointTest.stateOf(opt));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("policies")
    void muonAdamW_sparseGradientOnAMuonParameter_isUnsupported_underEveryPolicy(NonFinitePolicy policy) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        MuonAdamW opt = NonFinitePolicyTest.trainedOnce(named, policy);
        named.get("fc1.weight").mutable_grad().put(torch.randn(5, 4).to_sparse());
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);

        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, opt::step);
        assertEquals("MuonAdamW does not support sparse gradients; parameter 'fc1.weight' has a sparse gradient",
                e.getMessage());
        assertEquals(1, opt.stepCount());
        assertSameState(before, CheckpointTest.stateOf(opt));
    }

    /** A gradient on another device than its parameter (here the meta device: no GPU is needed to build one). */
    @org.junit.jupiter.api.Test
    void muonAdamW_gradientOnAnotherDevice_isRejected_andChangesNothing() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        MuonAdamW opt = NonFinitePolicyTest.trainedOnce(named, NonFinitePolicy.SKIP);
        named.get("fc1.weight").mutable_grad().put(torch.empty(new long[]{5, 4},
                new org.bytedeco.pytorch.TensorOptions().device(new org.bytedeco.pytorch.DeviceOptional(
                        new org.bytedeco.pytorch.Device("meta"))), null));
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);

        IllegalStateException e = assertThrows(IllegalStateException.class, opt::step);
        assertEquals("the gradient of parameter 'fc1.weight' is on meta but the parameter is on cpu; a gradient "
                + "must be on its parameter's device", e.getMessage());
        assertEquals(1, opt.stepCount());
        assertSameState(before, CheckpointTest.stateOf(opt));
    }

    static Stream<NonFinitePolicy> policies() {
        return Stream.of(NonFinitePolicy.values());
    }

    private static List<Tensor> snapshot(List<Tensor> params, Muon muon) {
        List<Tensor> copy = new ArrayList<>();
        for (Tensor p : params) {
            copy.add(p.clone());
            copy.add(muon.momentumBuffer(p).map(Tensor::clone).orElse(torch.zeros(0)));
        }
        return copy;
    }

    private static void assertSame(List<Tensor> expected, List<Tensor> actual) {
        for (int i = 0; i < expected.size(); i++) {
            assertTrue(expected.get(i).equal(actual.get(i)), "tensor " + i + " changed");
        }
    }

    private static void assertSameState(Map<String, Tensor> expected, Map<String, Tensor> actual) {
        assertEquals(expected.keySet(), actual.keySet());
        for (String key : expected.keySet()) {
            assertTrue(expected.get(key).equal(actual.get(key)), key + " changed");
        }
    }
}
