package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

import org.bytedeco.javacpp.Loader;

import java.io.File;
import java.io.IOException;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

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
 * <p>Probed once, at the first use: the platform, the library in the jar, libtorch loaded first (the kernels' OpenMP
 * threads are then libtorch's own pool, through the one {@code libgomp.so.1}), and what the CPU runs. The variant is
 * then {@code -Ddev.muon.native.isa}'s:
 * <table>
 *   <caption>{@value #ISA_PROPERTY}</caption>
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

    /** Set to {@code true} to force libtorch's products, e.g. to compare the two. */
    static final String DISABLE_PROPERTY = "dev.muon.native.disable";

    /** {@code auto}, {@code avx512} or {@code avx2}: which variant runs (see the class javadoc). */
    static final String ISA_PROPERTY = "dev.muon.native.isa";

    /** Where the build puts the library in the jar. */
    static final String LIBRARY_RESOURCE = "/dev/muon/orthogonalize/native/linux-x86_64/libmuoncpu.so";

    private static final System.Logger LOG = System.getLogger(NativeKernels.class.getName());

    /**
     * One instruction set's build of the kernels. Both compute the same products within the same bounds; see the
     * class javadoc for how one is chosen.
     */
    public enum Variant {
        /** AVX-512 with AVX512_BF16: Intel Cooper Lake, Sapphire Rapids and later, AMD Zen 4 and later. */
        AVX512("avx512", "AVX-512 F, BW and VL with AVX512_BF16", 0),
        /** AVX2 with FMA: Intel Haswell and later, AMD Excavator, Zen and later. */
        AVX2("avx2", "AVX2 and FMA", 1);

        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        private final String propertyValue;
        private final String features;
        /** The code the C side dispatches on ({@code MUON_VARIANT_*} in {@code muon_kernels.h}). */
        final int code;

        Variant(String propertyValue, String features, int code) {
            this.propertyValue = propertyValue;
            this.features = features;
            this.code = code;
        }

        /**
         * The value of {@code -Ddev.muon.native.isa} that asks for this variant.
         *
         * @return {@code avx512} or {@code avx2}
         */
        public String propertyValue() {
            return propertyValue;
        }

        /**
         * The CPU features this variant needs.
         *
         * @return e.g. {@code AVX2 and FMA}
         */
        public String features() {
            return features;
        }

        @Override
        public String toString() {
            return propertyValue;
        }
    }

    /**
     * What the probe found: the variant that runs (null: none, and why), every variant this CPU runs, and why the
     * library did not load (null: it did).
     */
    private record State(Variant variant, Throwable cause, Set<Variant> runnable, Throwable loadCause) {
    }

    private static final State STATE = load();

    private NativeKernels() {
    }

    private static State load() {
        String requested = System.getProperty(ISA_PROPERTY);
        Throwable cause = probe(Boolean.getBoolean(DISABLE_PROPERTY), System.getProperty("os.name"),
                System.getProperty("os.arch"), NativeKernels.class.getResource(LIBRARY_RESOURCE) != null);
        Set<Variant> runnable = EnumSet.noneOf(Variant.class);
        Variant variant = null;
        Throwable loadCause = cause;
        boolean explicit = requested != null && !requested.trim().equalsIgnoreCase("auto");
        if (cause == null) {
            try {
                // libtorch first, so that our libgomp.so.1 is libtorch's and its OpenMP pool is the one we use.
                Loader.load(org.bytedeco.pytorch.global.torch.class);
                loadLibrary();
            } catch (Throwable t) {
                cause = t;
                loadCause = t;
            }
        }
        if (cause == null) {
            for (Variant v : Variant.values()) {
                if (supports(v.code)) {
                    runnable.add(v);
                }
            }
            try {
                variant = select(requested, runnable);
            } catch (IllegalArgumentException | UnsupportedOperationException e) {
                cause = e;
            }
        }
        if (cause != null) {
            LOG.log(explicit ? System.Logger.Level.WARNING : System.Logger.Level.INFO, "muon-core's native CPU "
                    + "kernels are off, so bfloat16 Newton-Schulz forms its symmetric products from libtorch GEMMs and "
                    + "float32 runs on OpenBLAS (slower): " + cause);
        } else if (explicit) {
            LOG.log(System.Logger.Level.INFO, "muon-core's native CPU kernels run their " + variant + " variant ("
                    + variant.features() + "), as -D" + ISA_PROPERTY + "=" + requested + " asks");
        }
        return new State(variant, cause, Collections.unmodifiableSet(runnable), loadCause);
    }

    /**
     * Why the native kernel cannot run, from what can be known before loading it; null if nothing stands in the way.
     *
     * @param disabled        whether {@value #DISABLE_PROPERTY} is set
     * @param os              {@code os.name}
     * @param arch            {@code os.arch}
     * @param libraryInJar    whether the jar holds the library
     * @return the cause, or null
     */
    static Throwable probe(boolean disabled, String os, String arch, boolean libraryInJar) {
        if (disabled) {
            return new UnsupportedOperationException("disabled by -D" + DISABLE_PROPERTY + "=true");
        }
        if (!"Linux".equals(os) || !("amd64".equals(arch) || "x86_64".equals(arch))) {
            return new UnsupportedOperationException("it is built for Linux x86-64 only, and this is " + os + " "
                    + arch);
        }
        if (!libraryInJar) {
            return new UnsupportedOperationException("the muon-core jar holds no " + LIBRARY_RESOURCE
                    + ": it was built without gcc (build it with gcc on PATH)");
        }
        return null;
    }

    /**
     * The variant {@value #ISA_PROPERTY} asks for, among those this CPU runs.
     *
     * @param requested the property's value ({@code auto}, {@code avx512} or {@code avx2}, any case; null for
     *                  {@code auto})
     * @param runnable  the variants this CPU runs
     * @return the variant
     * @throws IllegalArgumentException      for any other value
     * @throws UnsupportedOperationException if this CPU cannot run the variant asked for, or, for {@code auto}, any
     */
    static Variant select(String requested, Set<Variant> runnable) {
        String value = requested == null ? "auto" : requested.trim();
        if (value.equalsIgnoreCase("auto")) {
            for (Variant v : Variant.values()) {
                if (runnable.contains(v)) {
                    return v;
                }
            }
            throw new UnsupportedOperationException("this CPU lacks " + Variant.AVX2.features()
                    + " (an Intel Haswell or later, or an AMD Excavator, Zen or later, has them)");
        }
        for (Variant v : Variant.values()) {
            if (value.equalsIgnoreCase(v.propertyValue())) {
                if (!runnable.contains(v)) {
                    throw new UnsupportedOperationException("-D" + ISA_PROPERTY + "=" + requested + " asks for the "
                            + v + " kernels, and this CPU lacks " + v.features());
                }
                return v;
            }
        }
        throw new IllegalArgumentException(ISA_PROPERTY + " must be auto, avx512 or avx2, got '" + requested + "'");
    }

    /**
     * Extracts the library into JavaCPP's cache, beside libtorch's natives ({@code ~/.javacpp/cache}, or
     * {@code -Dorg.bytedeco.javacpp.cachedir}), and loads it: JavaCPP keys the copy by the jar, re-extracts it when
     * the jar changes, and serialises concurrent JVMs; where libtorch's natives load, this one does too.
     */
    private static void loadLibrary() throws IOException {
        // Not null: probe() saw the resource.
        File file = Loader.cacheResource(NativeKernels.class, LIBRARY_RESOURCE);
        System.load(file.getAbsolutePath());
    }

    /**
     * Whether the native kernels run in this process (probed once, at the first call of any method here).
     *
     * @return true if the symmetric and Gram kernels' products on the CPU use them in bfloat16 and float32; false
     *         means {@link #unavailabilityCause()} says why
     */
    public static boolean isAvailable() {
        return STATE.variant != null;
    }

    /**
     * The variant that runs in this process.
     *
     * @return the variant, or empty where none runs ({@link #unavailabilityCause()} says why)
     */
    public static Optional<Variant> variant() {
        return Optional.ofNullable(STATE.variant);
    }

    /**
     * Why the native kernels do not run in this process.
     *
     * @return the cause, or null if they run
     */
    public static Throwable unavailabilityCause() {
        return STATE.cause;
    }

    /**
     * Throws unless the native kernels run in this process: for a deployment that must not fall back silently.
     *
     * @throws UnsupportedOperationException naming the cause, which it carries
     */
    public static void ensureAvailable() {
        if (STATE.cause != null) {
            throw new UnsupportedOperationException("muon-core's native CPU kernels cannot run here: "
                    + STATE.cause.getMessage(), STATE.cause);
        }
    }

    /**
     * Why {@code variant} cannot be called in this process, whichever variant was selected: the library did not
     * load, or this CPU lacks its instructions; null if it can. For tests that run every variant this CPU runs.
     */
    static Throwable variantUnavailabilityCause(Variant variant) {
        if (STATE.loadCause != null) {
            return STATE.loadCause;
        }
        return STATE.runnable.contains(variant) ? null
                : new UnsupportedOperationException("this CPU lacks " + variant.features());
    }

    /** Whether this CPU and OS run the variant's instructions. */
    private static native boolean supports(int variant);

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
