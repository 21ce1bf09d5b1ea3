package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

import java.util.Optional;

/**
 * Whether muon-core's own native CPU kernels run in this process, which variant, and why not. The library,
 * {@code libmuoncpu.so} (source: {@code muon-core/src/main/c}), holds two sets of Newton–Schulz products, and
 * Muon's momentum and update stages for float32 parameters, each in one pass ({@code muon_update_kernels.c}, used by
 * {@code dev.muon}'s step); the build puts it into the jar for Linux x86-64 when gcc is at hand:
 * <ul>
 *   <li>the bfloat16 half product {@code out = x·xᵀ} ({@code muon_cpu_kernels.c}), which libtorch lacks (it forms
 *       {@code x·xᵀ} as a full GEMM), and, in the AVX-512 variant only, a whole step of the symmetric bfloat16
 *       iteration in one pass ({@code muon_bf16_step.c}, {@link #bfloat16SymmetricStep});</li>
 *   <li>the float32 half product, polynomial and full products ({@code muon_f32_kernels.c}) for the float32
 *       symmetric and Gram kernels, in place of OpenBLAS's {@code ?syrk} (about 0.65 of its GEMM's time for half the
 *       multiply-adds; ours about 0.55) and of its thread pool, which alternates with libtorch's.</li>
 * </ul>
 * Each comes in two {@link Variant}s, one per instruction set: {@link Variant#AVX512} ({@code vdpbf16ps} for
 * bfloat16, 12 × 32 register tiles for float32) and {@link Variant#AVX2} (float32 FMAs in 6 × 16 register tiles,
 * bfloat16 widened to float32 as it is packed; {@code muon_avx2_kernels.c}). Both have the same error bounds, and
 * each gives the same bits for any thread count; in float32 the two give the same bits as each other.
 *
 * <p>Probed once, at the first use, by the one loader this class shares with {@link BufferKernels}: the platform,
 * the library in the jar, libtorch loaded first (the kernels' OpenMP threads are then libtorch's own pool, through
 * the one {@code libgomp.so.1}), and what the CPU runs. The variant is then {@code -Ddev.muon.native.isa}'s:
 * <table>
 *   <caption>{@code dev.muon.native.isa}</caption>
 *   <tr><td>{@code auto} (default, or unset)</td><td>{@code avx512} where the CPU has AVX512_BF16 (with AVX-512 F,
 *       BW and VL), else {@code avx2} where it has AVX2 and FMA, else none</td></tr>
 *   <tr><td>{@code avx512}, {@code avx2}</td><td>that variant, e.g. to measure the AVX2 kernels on an AVX-512
 *       machine; none (and a WARNING) where the CPU cannot run it</td></tr>
 *   <tr><td>anything else</td><td>none, with a WARNING and {@link #unavailabilityCause()} an
 *       {@link IllegalArgumentException} naming the property, the rule and the value</td></tr>
 * </table>
 * An explicit request is never replaced by another variant: a measurement of one must not silently run the other.
 * Without a variant, or with {@code -Ddev.muon.native.disable=true}, bfloat16 products run on libtorch GEMMs and
 * float32 ones on OpenBLAS as before, and the cause is logged once in one sentence.
 *
 * <pre>{@code
 * if (NativeKernels.isAvailable()) {
 *     System.out.println("native kernels: " + NativeKernels.variant().orElseThrow());
 * } else {
 *     System.out.println("Newton-Schulz products on libtorch and OpenBLAS: " + NativeKernels.unavailabilityCause());
 * }
 * }</pre>
 */
public final class NativeKernels {
    static {
        // Before anything here loads libtorch: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
    }

    private static final System.Logger LOG = System.getLogger(NativeKernels.class.getName());

    /**
     * One instruction set's build of the kernels. Both compute the same products within the same bounds; see the
     * class javadoc for how one is chosen.
     */
    public enum Variant {
        /** AVX-512 with AVX512_BF16: Intel Cooper Lake, Sapphire Rapids and later, AMD Zen 4 and later. */
        AVX512(NativeLibrary.Isa.AVX512),
        /** AVX2 with FMA: Intel Haswell and later, AMD Excavator, Zen and later. */
        AVX2(NativeLibrary.Isa.AVX2);

        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /** The loader's name for it: the property value, the features and the code. */
        final NativeLibrary.Isa isa;
        /** The code the C side dispatches on ({@code MUON_VARIANT_*} in {@code muon_kernels.h}). */
        final int code;

        Variant(NativeLibrary.Isa isa) {
            this.isa = isa;
            this.code = isa.code;
        }

        /**
         * The value of {@code -Ddev.muon.native.isa} that asks for this variant.
         *
         * @return {@code avx512} or {@code avx2}
         */
        public String propertyValue() {
            return isa.propertyValue;
        }

        /**
         * The CPU features this variant needs.
         *
         * @return e.g. {@code AVX2 and FMA}
         */
        public String features() {
            return isa.features;
        }

        @Override
        public String toString() {
            return isa.propertyValue;
        }

        /** The variant the loader names {@code isa}, or null for null. */
        static Variant of(NativeLibrary.Isa isa) {
            return isa == null ? null : values()[isa.ordinal()];
        }
    }

    /** Probed (the library loaded) by this class's initialization, the first use of any method here. */
    private static final NativeLibrary.State STATE = logged(NativeLibrary.state());

    private NativeKernels() {
    }

    /** Logs, once per JVM as this class initializes, why the kernels are off, or which variant a request chose. */
    private static NativeLibrary.State logged(NativeLibrary.State state) {
        if (state.cause() != null) {
            LOG.log(state.explicit() ? System.Logger.Level.WARNING : System.Logger.Level.INFO, "muon-core's native "
                    + "CPU kernels are off, so bfloat16 Newton-Schulz forms its symmetric products from libtorch GEMMs "
                    + "and float32 runs on OpenBLAS (slower): " + state.cause());
        } else if (state.explicit()) {
            Variant variant = Variant.of(state.variant());
            LOG.log(System.Logger.Level.INFO, "muon-core's native CPU kernels run their " + variant + " variant ("
                    + variant.features() + "), as -D" + NativeLibrary.ISA_PROPERTY + "=" + state.requested() + " asks");
        }
        return state;
    }

    /**
     * Whether the native kernels run in this process (probed once, at the first call of any method here).
     *
     * @return true if the symmetric and Gram kernels' products on the CPU use them in bfloat16 and float32; false
     *         means {@link #unavailabilityCause()} says why
     */
    public static boolean isAvailable() {
        return STATE.variant() != null;
    }

    /**
     * The variant that runs in this process.
     *
     * @return the variant, or empty where none runs ({@link #unavailabilityCause()} says why)
     */
    public static Optional<Variant> variant() {
        return Optional.ofNullable(Variant.of(STATE.variant()));
    }

    /**
     * Why the native kernels do not run in this process.
     *
     * @return the cause, or null if they run
     */
    public static Throwable unavailabilityCause() {
        return STATE.cause();
    }

    /**
     * Throws unless the native kernels run in this process: for a deployment that must not fall back silently.
     *
     * @throws UnsupportedOperationException naming the cause, which it carries
     */
    public static void ensureAvailable() {
        NativeLibrary.ensureAvailable();
    }

    /**
     * Why {@code variant} cannot be called in this process, whichever variant was selected: the library did not
     * load, or this CPU lacks its instructions; null if it can. For tests that run every variant this CPU runs.
     */
    static Throwable variantUnavailabilityCause(Variant variant) {
        return NativeLibrary.variantUnavailabilityCause(variant.isa);
    }

    /**
     * Bytes of packing scratch one {@link #bfloat16SelfProduct} call needs for an {@code m × k} matrix.
     *
     * @param variant the {@link Variant#code} of a variant this CPU runs
     * @param m rows
     * @param k columns
     * @return the bytes
     */
    static native long bfloat16PackBytes(int variant, int m, int k);

    /**
     * {@code out[i] = x[i]·x[i]ᵀ} for each of {@code batch} matrices, float32 accumulation rounded once to bfloat16,
     * both triangles written and exactly symmetric. No checks on this side of JNI: the caller passes contiguous
     * bfloat16 CPU memory of the stated shapes.
     *
     * @param variant the {@link Variant#code} of a variant this CPU runs
     * @param x       address of {@code batch × m × k} bfloat16 values
     * @param batch   matrices
     * @param m       rows of each
     * @param k       columns of each
     * @param out     address of {@code batch × m × m} bfloat16 values, not overlapping {@code x}
     * @param packed  address of {@link #bfloat16PackBytes}{@code (variant, m, k)} bytes of scratch
     * @param threads the OpenMP threads to use
     */
    static native void bfloat16SelfProduct(int variant, long x, int batch, int m, int k, long out, long packed,
                                           int threads);

    /**
     * {@code out[i] = a·I + b·s[i] + c·s[i]·s[i]} for each of {@code batch} exactly symmetric matrices, the sum formed
     * in float32 from the unrounded product and rounded once to bfloat16; exactly symmetric. Same contract as
     * {@link #bfloat16SelfProduct} with {@code x = s} and {@code k = m}.
     *
     * @param variant the {@link Variant#code} of a variant this CPU runs
     * @param s       address of {@code batch × m × m} bfloat16 values
     * @param batch   matrices
     * @param m       rows and columns of each
     * @param out     address of {@code batch × m × m} bfloat16 values, not overlapping {@code s}
     * @param packed  address of {@link #bfloat16PackBytes}{@code (variant, m, m)} bytes of scratch
     * @param threads the OpenMP threads to use
     * @param a       the coefficient of {@code I}
     * @param b       the coefficient of {@code s}
     * @param c       the coefficient of {@code s·s}
     */
    static native void bfloat16Polynomial(int variant, long s, int batch, int m, long out, long packed, int threads,
                                          float a, float b, float c);

    /**
     * Bytes of scratch one {@link #bfloat16SymmetricStep} call needs for an {@code m × n} {@code x}: its two
     * packings and the packing of {@code A} and then {@code B}.
     *
     * @param m rows
     * @param n columns
     * @return the bytes
     */
    static native long bfloat16SymmetricStepBytes(int m, int n);

    /**
     * One step of the symmetric bfloat16 iteration in one pass ({@code muon_bf16_step.c}, {@link Variant#AVX512}
     * only: call it only where that variant runs): {@code out = B·x} with {@code A = x·xᵀ} and
     * {@code B = a·I + b·A + c·A·A}, each product accumulated in float32 over its whole inner dimension in
     * {@code vdpbf16ps}'s order and rounded once to bfloat16; {@code A} and {@code B} formed from their tiles on and
     * below the diagonal, {@code B·x} by the same tiles, all on one OpenMP region. The same bits for any thread
     * count. No checks on this side of JNI: the caller passes contiguous bfloat16 CPU memory of the stated shapes.
     *
     * @param x       address of {@code m × n} bfloat16 values
     * @param m       rows
     * @param n       columns
     * @param aStore  address of {@code m × m} bfloat16 values, overwritten ({@code A}'s blocks on and below the
     *                diagonal)
     * @param bStore  address of {@code m × m} bfloat16 values, overwritten (the same of {@code B})
     * @param out     address of {@code m × n} bfloat16 values, overlapping none of the others
     * @param scratch address of {@link #bfloat16SymmetricStepBytes}{@code (m, n)} bytes
     * @param threads the OpenMP threads to use
     * @param a       the coefficient of {@code I}
     * @param b       the coefficient of {@code A}
     * @param c       the coefficient of {@code A·A}
     */
    static native void bfloat16SymmetricStep(long x, int m, int n, long aStore, long bStore, long out, long scratch,
                                             int threads, float a, float b, float c);

    /**
     * Bytes of packing scratch one float32 call needs: {@link #float32SelfProduct} of an {@code m × n} matrix,
     * {@link #float32Polynomial} with {@code n = m}, or {@link #float32Times} of {@code m × m} by {@code m × n}.
     *
     * @param variant the {@link Variant#code} of a variant this CPU runs
     * @param m rows
     * @param n columns
     * @return the bytes
     */
    static native long float32PackBytes(int variant, int m, int n);

    /**
     * {@code out = x·xᵀ} in float32 from the upper triangle's products (about half a GEMM's multiply-adds), both
     * triangles written and exactly symmetric; the same bits for any thread count. No checks on this side of JNI:
     * the caller passes contiguous float32 CPU memory of the stated shapes.
     *
     * @param variant the {@link Variant#code} of a variant this CPU runs
     * @param x          address of {@code m × k} float32 values
     * @param m          rows
     * @param k          columns
     * @param symmetricX whether {@code x} is exactly symmetric ({@code k = m}), which packs it faster
     * @param out        address of {@code m × m} float32 values, not overlapping {@code x}
     * @param packed     address of {@link #float32PackBytes}{@code (variant, m, k)} bytes of scratch
     * @param threads    the OpenMP threads to use
     */
    static native void float32SelfProduct(int variant, long x, int m, int k, boolean symmetricX, long out,
                                          long packed, int threads);

    /**
     * {@code out = a·I + b·s + c·s·s} in float32 for the exactly symmetric {@code m × m} {@code s}, the sum formed in
     * the same pass as the half product; exactly symmetric. Same contract as {@link #float32SelfProduct}.
     *
     * @param variant the {@link Variant#code} of a variant this CPU runs
     * @param s       address of {@code m × m} float32 values
     * @param m       rows and columns
     * @param out     address of {@code m × m} float32 values, not overlapping {@code s}
     * @param packed  address of {@link #float32PackBytes}{@code (variant, m, m)} bytes of scratch
     * @param threads the OpenMP threads to use
     * @param a       the coefficient of {@code I}
     * @param b       the coefficient of {@code s}
     * @param c       the coefficient of {@code s·s}
     */
    static native void float32Polynomial(int variant, long s, int m, long out, long packed, int threads, float a,
                                         float b, float c);

    /**
     * {@code out = l·r} in float32 for the {@code m × m} {@code l} and the {@code m × n} {@code r}; the same bits for
     * any thread count. Same contract as {@link #float32SelfProduct}.
     *
     * @param variant the {@link Variant#code} of a variant this CPU runs
     * @param l             address of {@code m × m} float32 values
     * @param leftSymmetric whether {@code l} is exactly symmetric, which packs it faster
     * @param r             address of {@code m × n} float32 values
     * @param m             rows of {@code l} and {@code r}
     * @param n             columns of {@code r}
     * @param symmetricOut  ({@code n = m}) whether {@code l} and {@code r} commute, so that the product is
     *                      symmetric in exact arithmetic: then only its upper triangle is formed (half the
     *                      multiply-adds) and mirrored, and the result is exactly symmetric
     * @param out           address of {@code m × n} float32 values, overlapping neither operand
     * @param packed        address of {@link #float32PackBytes}{@code (variant, m, n)} bytes of scratch
     * @param threads       the OpenMP threads to use
     */
    static native void float32Times(int variant, long l, boolean leftSymmetric, long r, int m, int n,
                                    boolean symmetricOut, long out, long packed, int threads);

    /**
     * {@code out = g / max(safety·‖g‖_F, eps)} in bfloat16, as libtorch's ops compute it from a float32 norm (the
     * norm here summed in double and rounded to float32): two passes over the bfloat16 values; the same bits for any
     * thread count.
     *
     * @param variant    the {@link Variant#code} of a variant this CPU runs
     * @param g          address of {@code m × n} bfloat16 values, or with {@code transposed} of {@code n × m} ones
     *                   whose transpose is meant
     * @param m          rows of {@code out}
     * @param n          columns of {@code out}
     * @param transposed whether {@code g} holds the transpose
     * @param out        address of {@code m × n} bfloat16 values, not overlapping {@code g}
     * @param threads    the OpenMP threads to use
     * @param safety     the factor on the norm
     * @param eps        the smallest denominator
     * @return false, having written nothing, if the kernel could not allocate its row sums
     */
    static native boolean bfloat16Normalize(int variant, long g, int m, int n, boolean transposed, long out,
                                            int threads, double safety, double eps);

    /**
     * {@code out = g / max(safety·‖g‖_F, eps)} in float32, as the OpenBLAS path computes it: the norm summed in
     * double and rounded to float32, then a multiplication by the float32 reciprocal; the same bits for any thread
     * count. Same contract as {@link #float32SelfProduct}.
     *
     * @param variant the {@link Variant#code} of a variant this CPU runs
     * @param g          address of {@code m × n} float32 values, or with {@code transposed} of {@code n × m} ones
     *                   whose transpose is meant
     * @param m          rows of {@code out}
     * @param n          columns of {@code out}
     * @param transposed whether {@code g} holds the transpose
     * @param out        address of {@code m × n} float32 values, not overlapping {@code g}
     * @param packed     address of {@link #float32PackBytes}{@code (variant, m, n)} bytes of scratch
     * @param threads    the OpenMP threads to use
     * @param safety     the factor on the norm
     * @param eps        the smallest denominator
     */
    static native void float32Normalize(int variant, long g, int m, int n, boolean transposed, long out,
                                        long packed, int threads, double safety, double eps);
}
