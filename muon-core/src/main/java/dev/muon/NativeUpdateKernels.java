package dev.muon;

/**
 * The JNI entry points of muon-core's native momentum and update passes ({@code muon_update_kernels.c}, in
 * {@code libmuoncpu.so}, which the one loader of {@code dev.muon.orthogonalize} loads when
 * {@link dev.muon.orthogonalize.NativeKernels} is first asked). Call only where {@code NativeKernels.variant()} gives
 * the variant passed, with arguments {@link NativeFusedUpdateKernels} checked: the C side trusts every address and
 * length.
 */
final class NativeUpdateKernels {
    private NativeUpdateKernels() {
    }

    /**
     * {@code B = lerp(B, g, 1 − μ)}, {@code out = nesterov ? lerp(g, B, μ) : B}, over {@code n} contiguous entries;
     * {@code buffer} and {@code grad} float32, {@code out} float32 or, with {@code outBfloat16}, bfloat16.
     */
    static native void momentum(int variant, long buffer, long grad, long out, boolean outBfloat16, long n,
                                double momentum, boolean nesterov, int threads);

    /**
     * {@code param = decay·param + alpha·update} for the contiguous float32 {@code rows × cols} {@code param};
     * {@code update} float32 or, with {@code updateBfloat16}, bfloat16, contiguous {@code rows × cols} or, with
     * {@code transposed}, the transpose of a contiguous {@code cols × rows} matrix.
     */
    static native void update(int variant, long param, long update, boolean updateBfloat16, boolean transposed,
                              long rows, long cols, double decay, double alpha, int threads);
}
