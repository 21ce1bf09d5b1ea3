package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** NaN and Inf gradients under each {@link NonFinitePolicy}, on either group. */
@ExtendWith(NativeScopePerTest.class)
class NonFinitePolicyTest {
    /** The parameters of this test's model, by name. */
    private final Map<String, Tensor> named = new LinkedHashMap<>();

    static Stream<Arguments> badGradients() {
        return Stream.of(
                Arguments.of("fc1.weight", Double.NaN),
                Arguments.of("fc1.weight", Double.POSITIVE_INFINITY),
                Arguments.of("fc1.bias", Double.NaN),
                Arguments.of("embed.weight", Double.NEGATIVE_INFINITY));
    }

    /** A model that has taken one good step, so that there is state to protect; the next gradients are set. */
    static MuonAdamW trainedOnce(Map<String, Tensor> named, NonFinitePolicy policy) {
        named.put("embed.weight", torch.randn(10, 4).requires_grad_(true));
        named.put("fc1.weight", torch.randn(5, 4).requires_grad_(true));
        named.put("fc1.bias", torch.randn(5).requires_grad_(true));
        MuonAdamW opt = MuonAdamW.builder(named).nonFinitePolicy(policy).build();
        TestModels.setGradients(named, 1);
        opt.step();
        TestModels.setGradients(named, 2);
        return opt;
    }

    static void poison(Map<String, Tensor> named, String name, double value) {
        Tensor grad = named.get(name).mutable_grad();
        grad.view(-1).narrow(0, 2, 1).fill_(new org.bytedeco.pytorch.Scalar(value));
    }

    /** This test's model ({@link #trainedOnce}), its next gradient of {@code name} poisoned with {@code value}. */
    private MuonAdamW poisonedAfterOneStep(NonFinitePolicy policy, String name, double value) {
        MuonAdamW opt = trainedOnce(named, policy);
        poison(named, name, value);
        return opt;
    }

    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("badGradients")
    void skip_leavesEverythingUntouched_andNamesTheParameter(String name, double value) {
        MuonAdamW opt = poisonedAfterOneStep(NonFinitePolicy.SKIP, name, value);
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);
        opt.step();
        assertTrue(opt.lastStep().skipped());
        assertEquals(name, opt.lastStep().nonFiniteParameter().orElseThrow());
        assertEquals(1, opt.stepCount());
        assertUnchanged(before, CheckpointTest.stateOf(opt));
        // the next good step goes through
        TestModels.setGradients(named, 3);
        opt.step();
        assertFalse(opt.lastStep().skipped());
        assertEquals(2, opt.stepCount());
    }

    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("badGradients")
    void raise_throwsNamingTheParameter_andChangesNothing(String name, double value) {
        MuonAdamW opt = poisonedAfterOneStep(NonFinitePolicy.RAISE, name, value);
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);
        IllegalStateException e = assertThrows(IllegalStateException.class, opt::step);
        assertEquals("the gradient of parameter '" + name + "' holds NaN or Inf (nonFinitePolicy RAISE); "
                + "nothing was changed", e.getMessage());
        assertEquals(1, opt.stepCount());
        assertUnchanged(before, CheckpointTest.stateOf(opt));
    }

    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("badGradients")
    void ignore_appliesTheStep_likePyTorch(String name, double value) {
        MuonAdamW opt = poisonedAfterOneStep(NonFinitePolicy.IGNORE, name, value);
        opt.step();
        assertEquals(2, opt.stepCount());
        assertFalse(opt.lastStep().skipped());
        assertFalse(named.get(name).isfinite().all().item_bool(), name + " now holds non-finite values");
    }

    @Test
    void defaultPolicy_isSkip() {
        named.put("w", torch.randn(3, 3).requires_grad_(true));
        MuonAdamW opt = MuonAdamW.builder(named).build();
        named.get("w").mutable_grad().put(torch.full(new long[]{3, 3}, new org.bytedeco.pytorch.Scalar(Double.NaN)));
        opt.step();
        assertTrue(opt.lastStep().skipped());
    }

    static void assertUnchanged(Map<String, Tensor> before, Map<String, Tensor> after) {
        assertEquals(before.keySet(), after.keySet());
        for (String key : before.keySet()) {
            assertTrue(before.get(key).equal(after.get(key)), key + " changed");
        }
    }
}
