package dev.muon.cuda;

import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which stages run on kernels, per the thresholds measured on an H100 (docs/cuda.md). */
class DispatchPolicyTest {
    private static final byte F32 = ScalarType.Float.value;
    private static final byte BF16 = ScalarType.BFloat16.value;
    private static final DispatchPolicy H100 = DispatchPolicy.measured(9, 0);

    static Stream<Arguments> h100Plans() {
        return Stream.of(
                // m, n, dtype, contiguous -> normalize, xxt, fusedB
                Arguments.of(8192, 8192, F32, true, true, true, true),
                Arguments.of(4096, 4096, F32, true, true, true, true),
                Arguments.of(4096, 16384, BF16, true, true, true, true),
                // X·Xᵀ measured 0.41–0.96× below 4096: libtorch; B = bA + cA² measured 1.05–1.51×: kernel.
                Arguments.of(3072, 3072, F32, true, true, false, true),
                Arguments.of(2048, 2048, F32, true, true, false, true),
                Arguments.of(1024, 4096, F32, true, true, false, true),
                Arguments.of(1024, 1024, BF16, true, true, false, true),
                Arguments.of(256, 1024, F32, true, true, false, true),
                // Below the smallest measured sizes: libtorch.
                Arguments.of(128, 1024, F32, true, false, false, false),
                Arguments.of(248, 256, F32, true, false, false, false),
                // Inputs the normalisation kernels do not take: libtorch normalises, kernels do the rest.
                Arguments.of(1024, 1024, ScalarType.Half.value, true, false, false, true),
                Arguments.of(1024, 1024, ScalarType.Double.value, true, false, false, true),
                Arguments.of(4096, 4096, F32, false, false, true, true),
                // Dimensions that are not whole 16-byte chunks: libtorch for the products.
                Arguments.of(1020, 1020, F32, true, true, false, false),
                Arguments.of(4096, 4100, F32, true, true, false, false));
    }

    @ParameterizedTest(name = "{0}x{1} dtype={2} contiguous={3}")
    @MethodSource("h100Plans")
    void h100_plan(long m, long n, byte dtype, boolean contiguous, boolean normalize, boolean xxt, boolean fusedB) {
        assertEquals(new DispatchPolicy.NsPlan(normalize, xxt, fusedB), H100.plan(1, m, n, dtype, contiguous));
    }

    @Test
    void h100_usesTheHopperKernel() {
        assertTrue(H100.hopperKernel());
        assertTrue(H100.anyKernel());
    }

    @ParameterizedTest(name = "sm_{0}{1}")
    @MethodSource("unmeasured")
    void unmeasuredArchitecture_runsEverythingOnLibtorch(int major, int minor) {
        DispatchPolicy p = DispatchPolicy.measured(major, minor);
        assertFalse(p.anyKernel());
        assertFalse(p.plan(1, 8192, 8192, F32, true).anyKernel());
        assertTrue(p.basis().contains(major + "." + minor), p.basis());
    }

    static Stream<Arguments> unmeasured() {
        return Stream.of(Arguments.of(8, 0), Arguments.of(8, 6), Arguments.of(8, 9), Arguments.of(10, 0),
                Arguments.of(12, 0));
    }

    @Test
    void forced_usesKernelsAtEverySize_butStillNeedsAlignment() {
        DispatchPolicy p = DispatchPolicy.forced(false);
        assertEquals(new DispatchPolicy.NsPlan(true, true, true), p.plan(1, 8, 16, BF16, true));
        assertEquals(new DispatchPolicy.NsPlan(true, false, false), p.plan(1, 12, 16, BF16, true));
        assertFalse(p.hopperKernel());
    }

    @Test
    void batchBeyondTheGrid_runsOnLibtorch() {
        assertEquals(new DispatchPolicy.NsPlan(true, true, true), H100.plan(65_535, 4096, 4096, F32, true));
        assertFalse(H100.plan(65_536, 4096, 4096, F32, true).anyKernel());
    }

    static Stream<Arguments> badThresholds() {
        return Stream.of(
                Arguments.of("minXxtOrder", 0L, 1L, 1L, "minXxtOrder must be >= 1, got 0"),
                Arguments.of("minFusedOrder", 1L, -3L, 1L, "minFusedOrder must be >= 1, got -3"),
                Arguments.of("minNormalizeElements", 1L, 1L, 0L, "minNormalizeElements must be >= 1, got 0"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badThresholds")
    void nonPositiveThreshold_isRejected(String field, long xxt, long fused, long normalize, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new DispatchPolicy("test", true, xxt, fused, normalize));
        assertEquals(message, e.getMessage());
    }
}
