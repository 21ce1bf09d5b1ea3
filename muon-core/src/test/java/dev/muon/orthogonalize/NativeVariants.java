package dev.muon.orthogonalize;

import java.util.Arrays;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The native kernels' variants as test parameters: every native test runs once per variant, and skips, with the
 * reason, the variants this CPU cannot run (on an AVX-512 machine both run, whichever {@code -Ddev.muon.native.isa}
 * selected for the rest of the process).
 */
final class NativeVariants {
    private NativeVariants() {
    }

    /** Every variant, runnable here or not. */
    static Stream<NativeKernels.Variant> all() {
        return Arrays.stream(NativeKernels.Variant.values());
    }

    /** Skips the calling test, naming the reason, unless this process can call {@code variant}'s kernels. */
    static void assumeRuns(NativeKernels.Variant variant) {
        Throwable cause = NativeKernels.variantUnavailabilityCause(variant);
        assumeTrue(cause == null, () -> "native " + variant + " kernels off: " + cause.getMessage());
    }
}
