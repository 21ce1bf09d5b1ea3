package dev.muon.cuda;

import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
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

import java.util.Optional;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The kernels through the Java launcher on a real GPU, against libtorch's float64 iteration. Runs with
 * {@code mvn -Pgpu -pl muon-cuda verify} on a machine with an NVIDIA GPU; skips elsewhere, printing why.
 */
@Tag("gpu")
@ExtendWith(RequireCuda.class)
// PointerScope and CUDAGuard work by existing: their try blocks never name them.
@SuppressWarnings("try")
class CudaNewtonSchulzGpuTest {
    private static final NewtonSchulzConfig BF16 = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16);

    private static Device cuda() {
        return new Device(torch.DeviceType.CUDA, (byte) 0);
    }

    private static Tensor randn(ScalarType dtype, long... shape) {
        return torch.randn(shape, new TensorOptions(dtype).device(new DeviceOptional(cuda())));
    }

    private static double relativeError(Tensor out, Tensor ref) {
        Tensor o = out.to(ScalarType.Double);
        Tensor r = ref.to(ScalarType.Double);
        return o.sub(r).norm().item_double() / r.norm().item_double();
    }

    static Stream<Arguments> shapes() {
        return Stream.of(Arguments.of((Object) new long[]{1024, 1024}), Arguments.of((Object) new long[]{1024, 4096}),
                Arguments.of((Object) new long[]{4096, 1024}), Arguments.of((Object) new long[]{4096, 4096}),
                Arguments.of((Object) new long[]{4, 512, 512}), Arguments.of((Object) new long[]{1020, 1020}),
                Arguments.of((Object) new long[]{256, 1024}));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("shapes")
    void cudaNewtonSchulz_matchesFloat64_likeLibtorchBf16(long[] shape) {
        try (PointerScope scope = new PointerScope()) {
            Tensor g = randn(ScalarType.Float, shape);
            Tensor exact = new NewtonSchulz(BF16.withNsPrecision(NsPrecision.FLOAT64)).orthogonalize(g);
            double libtorch = relativeError(new NewtonSchulz(BF16).orthogonalize(g), exact);
            for (boolean forced : new boolean[]{false, true}) {
                System.setProperty(CudaSupport.FORCE_PROPERTY, Boolean.toString(forced));
                try {
                    Tensor out = new CudaNewtonSchulz(BF16, cuda()).orthogonalize(g);
                    assertEquals(ScalarType.BFloat16.value, out.scalar_type().value);
                    double error = relativeError(out, exact);
                    assertTrue(error <= Math.max(0.05, 1.5 * libtorch), java.util.Arrays.toString(shape)
                            + " forced=" + forced + ": error " + error + " vs libtorch bf16 " + libtorch);
                } finally {
                    System.clearProperty(CudaSupport.FORCE_PROPERTY);
                }
            }
        }
    }

    @Test
    void provider_servesCudaInBf16() {
        try (PointerScope scope = new PointerScope()) {
            Optional<Orthogonalizer> o = new CudaOrthogonalizerProvider().create(BF16, cuda());
            assertTrue(o.isPresent() && o.get() instanceof CudaNewtonSchulz);
            assertTrue(new CudaOrthogonalizerProvider().create(NewtonSchulzConfig.defaults(), cuda()).isEmpty(),
                    "float32 iterations stay on libtorch");
        }
    }

    @Test
    void launcher_rejectsBadTensors_beforeLaunching() {
        try (PointerScope scope = new PointerScope()) {
            CudaKernels k = new CudaKernels(0);
            Tensor p = randn(ScalarType.BFloat16, 256, 512);
            Tensor c = randn(ScalarType.BFloat16, 256, 256);
            assertThrows(IllegalArgumentException.class,
                    () -> k.symmetric(p.cpu(), null, c, 1, 0, 0, false), "CPU operand");
            assertThrows(IllegalArgumentException.class,
                    () -> k.symmetric(p.to(ScalarType.Float), null, c, 1, 0, 0, false), "float32 operand");
            assertThrows(IllegalArgumentException.class,
                    () -> k.symmetric(p.mT(), null, c, 1, 0, 0, false), "transposed view");
            assertThrows(IllegalArgumentException.class,
                    () -> k.symmetric(p.narrow(1, 1, 504), null, c, 1, 0, 0, false), "misaligned view");
            assertThrows(IllegalArgumentException.class,
                    () -> k.symmetric(p, null, p.narrow(1, 0, 256), 1, 0, 0, false), "c aliasing p");
        }
    }

    @Test
    void symmetricKernel_matchesFloat64_andIsExactlySymmetric() {
        try (PointerScope scope = new PointerScope()) {
            CudaKernels k = new CudaKernels(0);
            Tensor p = randn(ScalarType.BFloat16, 1000, 1024);
            Tensor c = torch.full(new long[]{1000, 1000}, new org.bytedeco.pytorch.Scalar(Float.NaN),
                    new TensorOptions(ScalarType.BFloat16).device(new DeviceOptional(cuda())));
            try (var guard = new org.bytedeco.pytorch.cuda.CUDAGuard((byte) 0)) {
                k.symmetric(p, null, c, 1, 0, 0, k.hasHopperKernel());
            }
            Tensor pd = p.to(ScalarType.Double);
            double error = relativeError(c, pd.matmul(pd.mT()));
            assertTrue(error < 1e-2, "X Xᵀ relative error " + error);
            assertTrue(torch.equal(c, c.mT()), "the result must be exactly symmetric");
        }
    }

    @Test
    void fusedUpdates_matchLibtorch() {
        try (PointerScope scope = new PointerScope()) {
            FusedUpdates fused = new FusedUpdates(cuda());
            Tensor buffer = randn(ScalarType.Float, 512, 256);
            Tensor grad = randn(ScalarType.Float, 512, 256);
            Tensor out = randn(ScalarType.BFloat16, 512, 256);
            Tensor expectedBuffer = buffer.lerp(grad, new org.bytedeco.pytorch.Scalar(0.05));
            Tensor expectedUpdate = grad.lerp(expectedBuffer, new org.bytedeco.pytorch.Scalar(0.95));
            fused.momentum(buffer, grad, out, 0.95, true);
            assertTrue(relativeError(buffer, expectedBuffer) < 1e-6);
            assertTrue(relativeError(out, expectedUpdate) < 1e-2);

            Tensor param = randn(ScalarType.Float, 512, 256);
            Tensor expected = param.mul(new org.bytedeco.pytorch.Scalar(0.998))
                    .add(out.to(ScalarType.Float).mul(new org.bytedeco.pytorch.Scalar(-0.02)));
            fused.parameterUpdate(param, out, 0.998, -0.02);
            assertTrue(relativeError(param, expected) < 1e-6);
        }
    }
}
