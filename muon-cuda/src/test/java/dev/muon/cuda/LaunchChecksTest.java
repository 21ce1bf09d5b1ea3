package dev.muon.cuda;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The launcher's argument checks, which run before any launch, exercised with plain operand descriptions. */
// PointerScope and CUDAGuard work by existing: their try blocks never name them.
@SuppressWarnings("try")
class LaunchChecksTest {
    private static final byte BF16 = ScalarType.BFloat16.value;
    private static final byte F32 = ScalarType.Float.value;
    private static final byte F16 = ScalarType.Half.value;
    private static final long MB = 1 << 20;

    /** A dense CUDA tensor on device 0 at {@code address}. */
    private static Operand op(String name, byte dtype, long address, long... shape) {
        return new Operand(name, shape, dtype, true, true, 0, address);
    }

    private static Operand with(Operand o, boolean contiguous, boolean cuda, int device, long address) {
        return new Operand(o.name(), o.shape(), o.dtype(), contiguous, cuda, device, address);
    }

    private static final Operand P = op("p", BF16, 0, 256, 1024);
    private static final Operand C = op("c", BF16, 64 * MB, 256, 256);
    private static final Operand S = op("s", BF16, 128 * MB, 256, 256);

    @Test
    void validArguments_areAccepted() {
        assertDoesNotThrow(() -> LaunchChecks.symmetric(P, null, C, 0));
        assertDoesNotThrow(() -> LaunchChecks.symmetric(P, S, C, 0));
        assertDoesNotThrow(() -> LaunchChecks.symmetric(op("p", BF16, 0, 4, 128, 64), op("s", BF16, 64 * MB, 4, 128, 128),
                op("c", BF16, 128 * MB, 4, 128, 128), 0));
        assertDoesNotThrow(() -> LaunchChecks.normalize(op("g", F32, 0, 4096, 1024), op("x", BF16, 64 * MB, 1024, 4096),
                op("partials", F32, 128 * MB, 1024), 1024, 0));
        assertDoesNotThrow(() -> LaunchChecks.normalize(op("g", BF16, 0, 3, 100, 300), op("x", BF16, 64 * MB, 3, 100, 300),
                op("partials", F32, 128 * MB, 3072), 7, 0));
        assertDoesNotThrow(() -> LaunchChecks.momentum(op("buffer", F32, 0, 64, 64), op("grad", F32, MB, 64, 64),
                op("out", BF16, 2 * MB, 64, 64), 0.95, 0));
        assertDoesNotThrow(() -> LaunchChecks.parameterUpdate(op("param", F32, 0, 64, 64), op("update", BF16, MB, 64, 64), 0.999, -0.02, 0));
    }

    static Stream<Arguments> badSymmetricArguments() {
        return Stream.of(
                Arguments.of("p off CUDA", with(P, true, false, -1, 0), null, C, "p must be a CUDA tensor"),
                Arguments.of("p on another device", with(P, true, true, 1, 0), null, C, "p must be on cuda:0, got cuda:1"),
                Arguments.of("p strided", with(P, false, true, 0, 0), null, C, "p must be contiguous, got a strided view of shape [256, 1024]"),
                Arguments.of("p misaligned", with(P, true, true, 0, 8), null, C, "p must start on a 16-byte boundary, got address 0x8"),
                Arguments.of("p 1-D", op("p", BF16, 0, 1024), null, C, "p must be 2-D or a 3-D batch of matrices, got shape [1024]"),
                Arguments.of("p 4-D", op("p", BF16, 0, 2, 2, 8, 8), null, C, "p must be 2-D or a 3-D batch of matrices, got shape [2, 2, 8, 8]"),
                Arguments.of("p empty", op("p", BF16, 0, 0, 8), null, C, "p must not be empty, got shape [0, 8]"),
                Arguments.of("p float32", op("p", F32, 0, 256, 1024), null, C, "p must be BFloat16, got Float"),
                Arguments.of("p float16", op("p", F16, 0, 256, 1024), null, C, "p must be BFloat16, got Half"),
                Arguments.of("rows not multiple of 8", op("p", BF16, 0, 250, 1024), null, C, "p rows must be a multiple of 8, got 250"),
                Arguments.of("cols not multiple of 8", op("p", BF16, 0, 256, 1000 + 4), null, C, "p cols must be a multiple of 8, got 1004"),
                Arguments.of("batch too large", op("p", BF16, 0, 70_000, 8, 8), null, op("c", BF16, 64 * MB, 70_000, 8, 8), "p must have a batch of at most 65535, got 70000"),
                Arguments.of("c wrong shape", P, null, op("c", BF16, 64 * MB, 256, 1024), "c must have shape [256, 256], got [256, 1024]"),
                Arguments.of("c missing batch", op("p", BF16, 0, 2, 256, 1024), null, C, "c must have shape [2, 256, 256], got [256, 256]"),
                Arguments.of("c float32", P, null, op("c", F32, 64 * MB, 256, 256), "c must be BFloat16, got Float"),
                Arguments.of("c off CUDA", P, null, with(C, true, false, -1, 64 * MB), "c must be a CUDA tensor"),
                Arguments.of("c overlaps p", P, null, op("c", BF16, 1024, 256, 256), "c must not overlap p"),
                Arguments.of("s wrong shape", P, op("s", BF16, 128 * MB, 128, 128), C, "s must have shape [256, 256], got [128, 128]"),
                Arguments.of("s float32", P, op("s", F32, 128 * MB, 256, 256), C, "s must be BFloat16, got Float"),
                Arguments.of("c is s", P, op("s", BF16, 64 * MB, 256, 256), C, "c must not overlap s"),
                Arguments.of("s on another device", P, with(S, true, true, 2, 128 * MB), C, "s must be on cuda:0, got cuda:2"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badSymmetricArguments")
    void badSymmetricArgument_isRejected(String name, Operand p, Operand s, Operand c, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LaunchChecks.symmetric(p, s, c, 0));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }

    static Stream<Arguments> badNormalizeArguments() {
        Operand g = op("g", F32, 0, 4096, 1024);
        Operand x = op("x", BF16, 64 * MB, 1024, 4096);
        Operand tmp = op("partials", F32, 128 * MB, 1024);
        return Stream.of(
                Arguments.of("g float16", op("g", F16, 0, 4096, 1024), x, tmp, 1, "g must be Float or BFloat16, got Half"),
                Arguments.of("g strided", with(g, false, true, 0, 0), x, tmp, 1, "g must be contiguous"),
                Arguments.of("g 1-D", op("g", F32, 0, 4096), x, tmp, 1, "g must be 2-D or a 3-D batch of matrices, got shape [4096]"),
                Arguments.of("x not transposed for tall g", g, op("x", BF16, 64 * MB, 4096, 1024), tmp, 1, "x must have shape [1024, 4096], got [4096, 1024]"),
                Arguments.of("x float32", g, op("x", F32, 64 * MB, 1024, 4096), tmp, 1, "x must be BFloat16, got Float"),
                Arguments.of("x overlaps g", g, op("x", BF16, 4096, 1024, 4096), tmp, 1, "x must not overlap g"),
                Arguments.of("partials bfloat16", g, x, op("partials", BF16, 128 * MB, 1024), 1, "partials must be Float, got BFloat16"),
                Arguments.of("partials too small", op("g", F32, 0, 3, 64, 64), op("x", BF16, 64 * MB, 3, 64, 64), op("partials", F32, 128 * MB, 10), 4, "partials must hold at least batch * parts = 12 floats, got 10"),
                Arguments.of("parts zero", g, x, tmp, 0, "parts must be >= 1, got 0"),
                Arguments.of("partials overlap x", g, x, op("partials", F32, 64 * MB + 256, 1024), 1, "partials must not overlap x"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badNormalizeArguments")
    void badNormalizeArgument_isRejected(String name, Operand g, Operand x, Operand partials, int parts, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LaunchChecks.normalize(g, x, partials, parts, 0));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }

    static Stream<Arguments> badUpdateArguments() {
        Operand buf = op("buffer", F32, 0, 64, 64);
        Operand grad = op("grad", F32, MB, 64, 64);
        Operand out = op("out", BF16, 2 * MB, 64, 64);
        return Stream.of(
                Arguments.of("buffer bfloat16", (Runnable) () -> LaunchChecks.momentum(op("buffer", BF16, 0, 64, 64), grad, out, 0.9, 0), "buffer must be Float, got BFloat16"),
                Arguments.of("grad other shape", (Runnable) () -> LaunchChecks.momentum(buf, op("grad", F32, MB, 64, 32), out, 0.9, 0), "grad must have shape [64, 64], got [64, 32]"),
                Arguments.of("out float32", (Runnable) () -> LaunchChecks.momentum(buf, grad, op("out", F32, 2 * MB, 64, 64), 0.9, 0), "out must be BFloat16, got Float"),
                Arguments.of("out aliases grad", (Runnable) () -> LaunchChecks.momentum(buf, grad, op("out", BF16, MB, 64, 64), 0.9, 0), "out must not overlap grad"),
                Arguments.of("momentum one", (Runnable) () -> LaunchChecks.momentum(buf, grad, out, 1.0, 0), "momentum must be in [0, 1), got 1.0"),
                Arguments.of("momentum NaN", (Runnable) () -> LaunchChecks.momentum(buf, grad, out, Double.NaN, 0), "momentum must be in [0, 1), got NaN"),
                Arguments.of("grad off CUDA", (Runnable) () -> LaunchChecks.momentum(buf, with(grad, true, false, -1, MB), out, 0.9, 0), "grad must be a CUDA tensor"),
                Arguments.of("param bfloat16", (Runnable) () -> LaunchChecks.parameterUpdate(op("param", BF16, 0, 64, 64), op("update", BF16, MB, 64, 64), 1, -0.02, 0), "param must be Float, got BFloat16"),
                Arguments.of("update float32", (Runnable) () -> LaunchChecks.parameterUpdate(buf, op("update", F32, MB, 64, 64), 1, -0.02, 0), "update must be BFloat16, got Float"),
                Arguments.of("update transposed", (Runnable) () -> LaunchChecks.parameterUpdate(op("param", F32, 0, 64, 32), op("update", BF16, MB, 32, 64), 1, -0.02, 0), "update must have shape [64, 32], got [32, 64]"),
                Arguments.of("update strided", (Runnable) () -> LaunchChecks.parameterUpdate(buf, new Operand("update", new long[]{64, 64}, BF16, false, true, 0, MB), 1, -0.02, 0), "update must be contiguous"),
                Arguments.of("decay NaN", (Runnable) () -> LaunchChecks.parameterUpdate(buf, op("update", BF16, MB, 64, 64), Double.NaN, -0.02, 0), "decay must be finite in float32, the kernel's precision, got NaN"),
                Arguments.of("alpha infinite", (Runnable) () -> LaunchChecks.parameterUpdate(buf, op("update", BF16, MB, 64, 64), 1, Double.NEGATIVE_INFINITY, 0), "alpha must be finite in float32, the kernel's precision, got -Infinity"),
                Arguments.of("alpha past float32", (Runnable) () -> LaunchChecks.parameterUpdate(buf, op("update", BF16, MB, 64, 64), 1, 1e39, 0), "alpha must be finite in float32, the kernel's precision, got 1.0E39"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badUpdateArguments")
    void badUpdateArgument_isRejected(String name, Runnable call, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }

    @Test
    void operandOfCpuTensor_isRejectedAsOffCuda() {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.randn(16, 16).to(ScalarType.BFloat16);
            Operand o = Operand.of("p", x);
            assertFalse(o.cuda());
            assertEquals(BF16, o.dtype());
            assertEquals(256, o.numel());
            assertTrue(o.contiguous());
            Operand t = Operand.of("p", x.mT());
            assertFalse(t.contiguous(), "a transposed view is not contiguous");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> LaunchChecks.symmetric(o, null, o, 0));
            assertEquals("p must be a CUDA tensor, got a tensor off CUDA", e.getMessage());
        }
    }
}
