package dev.muon.cuda;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.cuda.internal.CudaFusedUpdateKernelsProvider;
import dev.muon.internal.FusedUpdateKernels;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fused momentum and update stages ({@link CudaFusedUpdateKernelsProvider} over {@link FusedUpdates}) against
 * libtorch's ops on {@code cuda:0}: each stage bit for bit where both sides are float32 (the buffer; the parameter
 * given the same update) and the bfloat16 {@code U} equal to libtorch's float32 {@code U} rounded once; inside
 * {@link Muon}, 20 steps with the fused stages against 20 with libtorch's ops: the momentum bit for bit (same
 * gradients), the parameters within the golden README's bfloat16 tolerance ({@code 0.2·lr·steps} absolute). Runs
 * with {@code mvn -Pgpu -pl muon-cuda -am verify} or the GPU test bundle ({@code docs/cuda.md}); skips elsewhere,
 * printing why.
 */
@Tag("gpu")
@ExtendWith(RequireCuda.class)
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
class FusedUpdateKernelsGpuTest {
    private static final int STEPS = 20;
    private static final MuonConfig CONFIG = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1)
            .withNsPrecision(NsPrecision.BFLOAT16);

    static Stream<Arguments> momenta() {
        // 0.95 and 0.9: 1 − μ in double rounds to another float than 1f − (float) μ; 0.5 and 0 take the other branch
        // of torch's lerp in the first blend.
        return Stream.of(Arguments.of(0.95, true), Arguments.of(0.95, false), Arguments.of(0.9, true),
                Arguments.of(0.99, false), Arguments.of(0.5, true), Arguments.of(0.0, true));
    }

    @ParameterizedTest(name = "momentum={0} nesterov={1}")
    @MethodSource("momenta")
    void momentumStage_equalsLibtorchsOps_bitForBit(double momentum, boolean nesterov) {
        try (PointerScope scope = new PointerScope()) {
            FusedUpdateKernels stages = stagesFor(cuda(ScalarType.Float, 96, 160));
            Tensor buffer = randn(ScalarType.Float, 96, 160);
            Tensor grad = randn(ScalarType.Float, 96, 160);
            // Muon's libtorch ops: B.lerp_(g, 1 − μ); U = g.lerp(B, μ) or B.
            Tensor expectedBuffer = buffer.clone().lerp_(grad, new Scalar(1 - momentum));
            Tensor expectedU = nesterov ? grad.lerp(expectedBuffer, new Scalar(momentum)) : expectedBuffer;
            Tensor out = torch.empty(new long[]{96, 160}, options(ScalarType.BFloat16), null);

            assertTrue(stages.momentumInto(out, buffer, grad, momentum, nesterov));
            assertTrue(torch.equal(buffer, expectedBuffer), "the float32 buffer is libtorch's, bit for bit");
            assertTrue(torch.equal(out, expectedU.to(ScalarType.BFloat16)),
                    "U is libtorch's float32 U rounded once to bfloat16");
        }
    }

    @ParameterizedTest(name = "weightDecay={0}")
    @ValueSource(doubles = {0.1, 0.0})
    void updateStage_equalsLibtorchsOps_bitForBit(double weightDecay) {
        try (PointerScope scope = new PointerScope()) {
            Tensor param = randn(ScalarType.Float, 128, 192);
            FusedUpdateKernels stages = stagesFor(param);
            Tensor o = randn(ScalarType.BFloat16, 128, 192);
            double decay = 1 - 0.02 * weightDecay;
            double alpha = -0.02 * Math.sqrt(1.5);
            // Muon's libtorch ops: the decay only with weight decay, then p.add_(O, alpha).
            Tensor expected = param.clone();
            if (weightDecay != 0) {
                expected.mul_(new Scalar(decay));
            }
            expected.add_(o, new Scalar(alpha));

            assertTrue(stages.updateParameter(param, o, decay, alpha));
            assertTrue(torch.equal(param, expected), "the parameter is libtorch's, bit for bit");
        }
    }

    @Test
    void stages_declineWhatTheKernelsDoNotTake_andWriteNothing() {
        try (PointerScope scope = new PointerScope()) {
            Tensor param = randn(ScalarType.Float, 96, 48);
            FusedUpdateKernels stages = stagesFor(param);
            Tensor before = param.clone();
            // The orthogonalized update of a tall parameter is the transpose of a workspace.
            Tensor transposed = randn(ScalarType.BFloat16, 48, 96).mT();
            assertFalse(stages.updateParameter(param, transposed, 0.998, -0.02));
            assertTrue(torch.equal(param, before));

            // Slice 1 of a [3, 5, 3] bfloat16 stack starts 30 bytes in: not 16-byte aligned.
            Tensor buffer = randn(ScalarType.Float, 5, 3);
            Tensor bufferBefore = buffer.clone();
            Tensor slice = torch.zeros(new long[]{3, 5, 3}, options(ScalarType.BFloat16)).select(0, 1);
            assertFalse(stages.momentumInto(slice, buffer, randn(ScalarType.Float, 5, 3), 0.95, true));
            assertTrue(torch.equal(buffer, bufferBefore));
            assertTrue(torch.equal(slice, torch.zeros_like(slice)));
        }
    }

    @Test
    void provider_servesOnlyContiguousFloat32WithABfloat16Update() {
        try (PointerScope scope = new PointerScope()) {
            CudaFusedUpdateKernelsProvider provider = new CudaFusedUpdateKernelsProvider();
            Tensor f32 = randn(ScalarType.Float, 64, 32);
            assertTrue(provider.forParameter(f32, ScalarType.BFloat16).isPresent());
            assertTrue(provider.forParameter(f32, ScalarType.Float).isEmpty(), "a float32 iteration");
            assertTrue(provider.forParameter(randn(ScalarType.BFloat16, 64, 32), ScalarType.BFloat16).isEmpty());
            assertTrue(provider.forParameter(randn(ScalarType.Float, 32, 64).t(), ScalarType.BFloat16).isEmpty());
            System.setProperty(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY, "true");
            try {
                assertTrue(provider.forParameter(f32, ScalarType.BFloat16).isEmpty());
            } finally {
                System.clearProperty(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY);
            }
        }
    }

    @ParameterizedTest(name = "nesterov={0}")
    @ValueSource(booleans = {true, false})
    void muonWithFusedStages_keepsLibtorchsMomentumBitForBit_andItsParametersWithinBf16_over20Steps(
            boolean nesterov) {
        try (PointerScope scope = new PointerScope()) {
            MuonConfig config = CONFIG.withNesterov(nesterov);
            // Tall, two wide ones (a same-shape batch: the fused momentum writes into its bfloat16 stack), square.
            List<long[]> shapes = List.of(new long[]{256, 128}, new long[]{128, 256}, new long[]{128, 256},
                    new long[]{192, 192});
            torch.manual_seed(5);
            List<Tensor> fusedParams = new ArrayList<>();
            List<Tensor> plainParams = new ArrayList<>();
            for (long[] shape : shapes) {
                Tensor p = randn(ScalarType.Float, shape);
                fusedParams.add(p.requires_grad_(true));
                plainParams.add(p.detach().clone().requires_grad_(true));
            }
            Muon fused = Muon.of(fusedParams, config);
            Muon plain = libtorchOps(() -> Muon.of(plainParams, config));
            for (Tensor p : fusedParams) {
                assertTrue(new CudaFusedUpdateKernelsProvider().forParameter(p, ScalarType.BFloat16).isPresent());
            }
            for (int k = 1; k <= STEPS; k++) {
                for (int i = 0; i < shapes.size(); i++) {
                    Tensor grad = randn(ScalarType.Float, shapes.get(i));
                    fusedParams.get(i).mutable_grad().put(grad);
                    plainParams.get(i).mutable_grad().put(grad.clone());
                }
                fused.step();
                plain.step();
                for (int i = 0; i < shapes.size(); i++) {
                    assertTrue(torch.equal(fused.momentumBuffer(fusedParams.get(i)).orElseThrow(),
                            plain.momentumBuffer(plainParams.get(i)).orElseThrow()),
                            "step " + k + " momentum " + i + " is libtorch's, bit for bit");
                }
                assertParametersWithinBf16(fusedParams, plainParams, config, k);
            }
        }
    }

    @Test
    void smallMlp_trainedWithFusedStages_tracksLibtorchsOps_over20Steps() {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(21);
            Tensor x = randn(ScalarType.Float, 512, 64);
            List<Tensor> teacher = mlp();
            Tensor y = forward(teacher, x).detach();
            List<Tensor> fusedParams = mlp();
            List<Tensor> plainParams = new ArrayList<>();
            for (Tensor p : fusedParams) {
                p.requires_grad_(true);
                plainParams.add(p.detach().clone().requires_grad_(true));
            }
            Muon fused = Muon.of(fusedParams, CONFIG);
            Muon plain = libtorchOps(() -> Muon.of(plainParams, CONFIG));
            BiFunction<Muon, List<Tensor>, Double> step = (muon, params) -> {
                try (PointerScope stepScope = new PointerScope()) {
                    muon.zeroGrad();
                    Tensor loss = torch.mse_loss(forward(params, x), y);
                    loss.backward();
                    muon.step();
                    return loss.item_double();
                }
            };
            for (int k = 1; k <= STEPS; k++) {
                double fusedLoss = step.apply(fused, fusedParams);
                double plainLoss = step.apply(plain, plainParams);
                System.out.printf("FusedUpdateKernelsGpuTest: step %2d  loss fused %.6f  libtorch %.6f%n", k,
                        fusedLoss, plainLoss);
                assertParametersWithinBf16(fusedParams, plainParams, CONFIG, k);
            }
        }
    }

    /** shared/golden/README.md: a bfloat16 iteration keeps parameters within {@code 0.2·lr·steps} absolute. */
    private static void assertParametersWithinBf16(List<Tensor> got, List<Tensor> expected, MuonConfig config,
                                                   int steps) {
        double tolerance = 0.2 * config.lr() * steps;
        for (int i = 0; i < got.size(); i++) {
            double error = got.get(i).detach().sub(expected.get(i).detach()).abs().max().item_double();
            assertTrue(error <= tolerance, "step " + steps + " parameter " + i + ": abs error " + error
                    + " > " + tolerance);
        }
    }

    /** Builds with the fused stages switched off, so that momentum and update run on libtorch's ops. */
    private static Muon libtorchOps(java.util.function.Supplier<Muon> build) {
        System.setProperty(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY, "true");
        try {
            return build.get();
        } finally {
            System.clearProperty(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY);
        }
    }

    /** Three hidden matrices, no biases: every parameter is Muon's. */
    private static List<Tensor> mlp() {
        return List.of(randn(ScalarType.Float, 256, 64).mul(new Scalar(1 / Math.sqrt(64))),
                randn(ScalarType.Float, 256, 256).mul(new Scalar(1 / Math.sqrt(256))),
                randn(ScalarType.Float, 16, 256).mul(new Scalar(1 / Math.sqrt(256))));
    }

    private static Tensor forward(List<Tensor> w, Tensor x) {
        Tensor h = x.matmul(w.get(0).t()).relu();
        h = h.matmul(w.get(1).t()).relu();
        return h.matmul(w.get(2).t());
    }

    private static FusedUpdateKernels stagesFor(Tensor param) {
        return new CudaFusedUpdateKernelsProvider().forParameter(param, ScalarType.BFloat16).orElseThrow();
    }

    private static Tensor cuda(ScalarType dtype, long... shape) {
        return torch.zeros(shape, options(dtype));
    }

    private static Tensor randn(ScalarType dtype, long... shape) {
        return torch.randn(shape, options(dtype));
    }

    private static TensorOptions options(ScalarType dtype) {
        return new TensorOptions(dtype).device(new DeviceOptional(new Device(torch.DeviceType.CUDA, (byte) 0)));
    }
}
