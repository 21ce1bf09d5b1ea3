package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.internal.FusedUpdateKernels;
import dev.muon.orthogonalize.NativeKernels;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The seam of the fused momentum and update stages ({@link dev.muon.internal.FusedUpdateKernels}): {@link Muon} asks
 * the
 * providers once per parameter at build, uses the stages of a served parameter, falls back to libtorch's ops per
 * parameter where the provider declines and per call where a stage declines, and without any stage steps bit for
 * bit as before. The provider is {@link RecordingFusedKernelsProvider}, switched on for the thread of one test.
 */
@ExtendWith(NativeScopePerTest.class)
class MuonFusedKernelsTest {
    private static final int STEPS = 20;
    /** wide, tall, square, and two more of the wide shape, which batch with the first. */
    private static final List<long[]> SHAPES = List.of(new long[]{16, 24}, new long[]{24, 16}, new long[]{12, 12},
            new long[]{16, 24}, new long[]{16, 24});
    private static final MuonConfig CONFIG = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1);

    @ParameterizedTest(name = "nesterov={0}")
    @ValueSource(booleans = {true, false})
    void providerDecliningEverything_stepsBitForBitAsWithout(boolean nesterov) {
        MuonConfig config = CONFIG.withNesterov(nesterov);
        Run plain = new Run(config, null);
        Run declined;
        try (RecordingFusedKernelsProvider.Recorder recorder = RecordingFusedKernelsProvider.serving(m -> false)) {
            declined = new Run(config, plain);
            assertEquals(SHAPES.size(), recorder.asked, "asked once per parameter, at build");
            for (int k = 1; k <= STEPS; k++) {
                stepBoth(plain, declined, k);
                for (int i = 0; i < SHAPES.size(); i++) {
                    assertArrayEquals(Tensors.values(plain.params.get(i)), Tensors.values(declined.params.get(i)),
                            "step " + k + " parameter " + i);
                    assertArrayEquals(Tensors.values(plain.momentum(i)), Tensors.values(declined.momentum(i)),
                            "step " + k + " momentum " + i);
                }
            }
            assertEquals(SHAPES.size(), recorder.asked, "never asked again while stepping");
            assertEquals(0, recorder.momentumCalls + recorder.updateCalls + recorder.updatesDeclined);
        }
    }

    @ParameterizedTest(name = "nesterov={0}")
    @ValueSource(booleans = {true, false})
    void servedStages_areUsed_andTrackLibtorch_withinFloat32Rounding(boolean nesterov) {
        MuonConfig config = CONFIG.withNesterov(nesterov);
        Run plain = new Run(config, null);
        try (RecordingFusedKernelsProvider.Recorder recorder = RecordingFusedKernelsProvider.serving(m -> true)) {
            Run fused = new Run(config, plain);
            assertEquals(1, fused.muon.sameShapeBatches(0).size(), "the three wide parameters form a batch");
            assertEquals(Collections.nCopies(SHAPES.size(), ScalarType.Float.value), recorder.updateTypes,
                    "offered with the float32 iteration's dtype");
            for (int k = 1; k <= STEPS; k++) {
                stepBoth(plain, fused, k);
                assertEquals(3, fused.muon.batchedLastStep());
                plain.assertClose(fused, 1e-5, "step " + k);
            }
            assertEquals(STEPS * SHAPES.size(), recorder.momentumCalls, "every momentum on the stage");
            // The tall parameter's update is the transpose of a workspace, which the stage declines call by call.
            assertEquals(STEPS * (SHAPES.size() - 1), recorder.updateCalls);
            assertEquals(STEPS, recorder.updatesDeclined);
        }
    }

    @Test
    void declinedParameters_keepLibtorchsOps_bitForBit_whileServedOnesUseTheStages() {
        // Served: the square parameter only. The others, batched or not, must not notice the provider.
        Predicate<Tensor> squareOnly = m -> m.size(0) == m.size(1);
        Run plain = new Run(CONFIG, null);
        try (RecordingFusedKernelsProvider.Recorder recorder = RecordingFusedKernelsProvider.serving(squareOnly)) {
            Run mixed = new Run(CONFIG, plain);
            for (int k = 1; k <= STEPS; k++) {
                stepBoth(plain, mixed, k);
                for (int i = 0; i < SHAPES.size(); i++) {
                    if (i != 2) {
                        assertArrayEquals(Tensors.values(plain.params.get(i)), Tensors.values(mixed.params.get(i)),
                                "step " + k + " parameter " + i);
                    }
                }
                plain.assertClose(mixed, 1e-5, "step " + k);
            }
            assertEquals(STEPS, recorder.momentumCalls);
            assertEquals(STEPS, recorder.updateCalls);
        }
    }

    @Test
    void bfloat16Iteration_batchStackTakesTheUpdateDtype_andTracksLibtorch() {
        MuonConfig config = CONFIG.withNsPrecision(NsPrecision.BFLOAT16);
        Run plain = new Run(config, null);
        try (RecordingFusedKernelsProvider.Recorder recorder = RecordingFusedKernelsProvider.serving(m -> true)) {
            Run fused = new Run(config, plain);
            assertEquals(Collections.nCopies(SHAPES.size(), ScalarType.BFloat16.value), recorder.updateTypes);
            for (int k = 1; k <= STEPS; k++) {
                stepBoth(plain, fused, k);
                assertEquals(3, fused.muon.batchedLastStep());
                // Momentum never passes through bfloat16: float32 rounding of the other formulation only.
                for (int i = 0; i < SHAPES.size(); i++) {
                    double error = Tensors.relativeError(fused.momentum(i), Tensors.values(plain.momentum(i)));
                    assertTrue(error <= 1e-5, "step " + k + " momentum " + i + ": rel error " + error);
                }
                // shared/golden/README.md: a bfloat16 iteration keeps parameters within 0.2·lr·steps absolute.
                double tolerance = 0.2 * config.lr() * k;
                for (int i = 0; i < SHAPES.size(); i++) {
                    double error = Tensors.maxAbsError(fused.params.get(i), Tensors.values(plain.params.get(i)));
                    assertTrue(error <= tolerance, "step " + k + " parameter " + i + ": abs error " + error);
                }
            }
            // Every U, batched or alone, was written in bfloat16: the batch's stack is in the update dtype.
            assertEquals(Collections.nCopies(STEPS * SHAPES.size(), ScalarType.BFloat16.value),
                    recorder.momentumOutTypes);
        }
    }

    @Test
    void exactSvd_isNeverOffered() {
        try (RecordingFusedKernelsProvider.Recorder recorder = RecordingFusedKernelsProvider.serving(m -> true)) {
            new Run(CONFIG.withOrthogonalization(Orthogonalization.EXACT_SVD), null);
            assertEquals(0, recorder.asked);
        }
    }

    @Test
    void outsideTheSwitch_theTestProviderServesNothing() {
        Run run = new Run(CONFIG, null);
        for (int i = 0; i < SHAPES.size(); i++) {
            // What is left is muon-core's own: the native CPU stages where they run, else libtorch's ops.
            FusedUpdateKernels stages = run.muon.fusedKernelsOf(run.params.get(i));
            if (NativeKernels.isAvailable() && NativeFusedUpdateKernels.atenVectorized()) {
                assertInstanceOf(NativeFusedUpdateKernels.class, stages, "parameter " + i);
            } else {
                assertEquals(null, stages, "parameter " + i);
            }
        }
    }

    @Test
    void fallbackMessage_withoutProvider_pointsToMuonCuda() {
        assertEquals("Muon: CUDA parameters use libtorch's momentum and update ops; add dev.muon:muon-cuda to the "
                        + "class path for the fused kernels",
                FusedKernelSelection.fallbackMessage(false, "blocks.0.attn.weight", ScalarType.Half, true,
                        "FLOAT32"));
    }

    @Test
    void fallbackMessage_withProvider_namesTheParameterItsPropertiesAndTheRule() {
        String message = FusedKernelSelection.fallbackMessage(true, "blocks.0.attn.weight", ScalarType.Half, false,
                "FLOAT32");
        assertEquals("Muon: blocks.0.attn.weight (Half, not contiguous, nsPrecision FLOAT32) uses libtorch's "
                + "momentum and update ops: the fused kernels take contiguous float32 parameters with nsPrecision "
                + "BFLOAT16 on an available CUDA device", message);
        assertFalse(FusedKernelSelection.fallbackMessage(true, "w", ScalarType.Float, true, "BFLOAT16")
                .contains("not contiguous"));
    }

    private static void stepBoth(Run a, Run b, int step) {
        torch.manual_seed(1000 + step);
        for (int i = 0; i < SHAPES.size(); i++) {
            Tensor grad = torch.randn(SHAPES.get(i));
            a.params.get(i).mutable_grad().put(grad);
            b.params.get(i).mutable_grad().put(grad.clone());
        }
        a.muon.step();
        b.muon.step();
    }

    /** Float32 parameters of {@link #SHAPES} (fresh, or copies of another run's) and a Muon over them. */
    private static final class Run {
        final List<Tensor> params = new ArrayList<>();
        final Muon muon;

        Run(MuonConfig config, Run copyOf) {
            torch.manual_seed(7);
            for (int i = 0; i < SHAPES.size(); i++) {
                Tensor p = copyOf == null ? torch.randn(SHAPES.get(i)) : copyOf.params.get(i).detach().clone();
                params.add(p.requires_grad_(true));
            }
            muon = Muon.of(params, config);
        }

        Tensor momentum(int i) {
            return muon.momentumBuffer(params.get(i)).orElseThrow();
        }

        void assertClose(Run other, double tolerance, String when) {
            for (int i = 0; i < SHAPES.size(); i++) {
                double error = Tensors.relativeError(other.params.get(i), Tensors.values(params.get(i)));
                assertTrue(error <= tolerance, when + " parameter " + i + ": rel error " + error);
                double momentumError = Tensors.relativeError(other.momentum(i), Tensors.values(momentum(i)));
                assertTrue(momentumError <= tolerance, when + " momentum " + i + ": rel error " + momentumError);
            }
        }
    }
}
