package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decisions of issue 18 that are not bugs but that users hit: a step without gradients is not counted, two
 * threads in one optimizer are an exception naming both, and Muon refuses non-leaf parameters and parameters that
 * share memory (it accepts ones without requires_grad, as PyTorch does: they are skipped until they have a
 * gradient).
 */
@ExtendWith(NativeScopePerTest.class)
class OptimizerContractTest {
    @Test
    void muonAdamW_stepWithoutAnyGradient_changesNothing_andIsNotCounted() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        MuonAdamW opt = NonFinitePolicyTest.trainedOnce(named, NonFinitePolicy.SKIP);
        opt.zeroGrad();
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);
        opt.step();
        assertEquals(1, opt.stepCount());
        assertTrue(opt.lastStep().skipped());
        assertTrue(opt.lastStep().nonFiniteParameter().isEmpty());
        Map<String, Tensor> after = CheckpointTest.stateOf(opt);
        for (String key : before.keySet()) {
            assertTrue(before.get(key).equal(after.get(key)), key + " changed");
        }
    }

    @Test
    void muonAdamW_secondThreadInStep_isRefused_namingBothThreads() throws InterruptedException {
        Map<String, Tensor> named = new LinkedHashMap<>();
        MuonAdamW opt = NonFinitePolicyTest.trainedOnce(named, NonFinitePolicy.SKIP);
        String name = Thread.currentThread().getName();
        Thread.currentThread().setName("trainer-1");
        try (SingleThreadGuard.Entered inside = opt.guard.enter("step")) {
            Throwable thrown = failureOnAnotherThread("trainer-2", opt::step);
            assertInstanceOf(IllegalStateException.class, thrown);
            assertEquals("MuonAdamW.step() was called on thread 'trainer-2' while thread 'trainer-1' is inside "
                    + "MuonAdamW.step(); an optimizer is not thread-safe: call it from one thread at a time",
                    thrown.getMessage());
        } finally {
            Thread.currentThread().setName(name);
        }
        assertEquals(1, opt.stepCount(), "the refused step changed nothing");
        opt.step();
        assertEquals(2, opt.stepCount(), "the guard lets the next call in");
    }

    @Test
    void muon_secondThreadInStep_isRefused_namingBothThreads() throws InterruptedException {
        Tensor w = torch.randn(4, 4);
        Muon muon = Muon.of(List.of(w), MuonConfig.defaults());
        w.mutable_grad().put(torch.randn(4, 4));
        String name = Thread.currentThread().getName();
        Thread.currentThread().setName("trainer-1");
        try (SingleThreadGuard.Entered inside = muon.guard.enter("step")) {
            Throwable thrown = failureOnAnotherThread("trainer-2", muon::step);
            assertEquals("Muon.step() was called on thread 'trainer-2' while thread 'trainer-1' is inside "
                    + "Muon.step(); an optimizer is not thread-safe: call it from one thread at a time",
                    thrown.getMessage());
        } finally {
            Thread.currentThread().setName(name);
        }
    }

    static Stream<Arguments> refusedParameters() {
        Supplier<List<Tensor>> nonLeaf = () -> List.of(torch.randn(4, 4).requires_grad_(true).mul(
                new org.bytedeco.pytorch.Scalar(2.0)));
        Supplier<List<Tensor>> overlapping = () -> {
            Tensor base = torch.randn(8, 4);
            return List.of(base.narrow(0, 0, 4), base.narrow(0, 2, 4));
        };
        Supplier<List<Tensor>> detachedTwin = () -> {
            Tensor w = torch.randn(4, 4);
            return List.of(torch.randn(3, 3), w, w.detach());
        };
        Supplier<List<Tensor>> transposedTwin = () -> {
            Tensor w = torch.randn(4, 6);
            return List.of(w.t(), w);
        };
        return Stream.of(
                Arguments.of("nonLeaf_isRejected", nonLeaf, "parameter 0 of group 0 is not a leaf tensor (it was "
                        + "computed from others); Muon updates parameters in place and takes leaf tensors only, as "
                        + "PyTorch's optimizers do"),
                Arguments.of("overlappingSlices_areRejected", overlapping, "parameter 1 of group 0 shares memory "
                        + "with parameter 0 of group 0; Muon updates each parameter in place, so parameters must "
                        + "not overlap"),
                Arguments.of("detachedTwin_isRejected", detachedTwin, "parameter 2 of group 0 shares memory with "
                        + "parameter 1 of group 0; Muon updates each parameter in place, so parameters must not "
                        + "overlap"),
                Arguments.of("transposedTwin_isRejected", transposedTwin, "parameter 1 of group 0 shares memory "
                        + "with parameter 0 of group 0; Muon updates each parameter in place, so parameters must "
                        + "not overlap"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusedParameters")
    void muon_refusesParameters(String name, Supplier<List<Tensor>> params, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Muon.of(params.get(), MuonConfig.defaults()));
        assertEquals(message, e.getMessage());
    }

    @Test
    void muon_acceptsDisjointSlicesOfOneBuffer_andParametersWithoutRequiresGrad() {
        Tensor base = torch.randn(8, 4);
        Tensor top = base.narrow(0, 0, 4);
        Tensor bottom = base.narrow(0, 4, 4);
        Muon muon = Muon.of(List.of(top, bottom), MuonConfig.defaults());
        top.mutable_grad().put(torch.randn(4, 4));
        Tensor bottomBefore = bottom.clone();
        muon.step();
        assertTrue(bottom.equal(bottomBefore), "a parameter without a gradient is skipped");
        assertTrue(muon.momentumBuffer(top).isPresent());
    }

    private static Throwable failureOnAnotherThread(String threadName, Runnable call) throws InterruptedException {
        Throwable[] thrown = new Throwable[1];
        Thread other = new Thread(() -> {
            try {
                call.run();
            } catch (Throwable t) {
                thrown[0] = t;
            }
        }, threadName);
        other.start();
        other.join();
        assertTrue(thrown[0] != null, "the second thread was let in");
        return thrown[0];
    }
}
