package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.Loader;

import java.io.File;
import java.io.IOException;

/**
 * Whether muon-core's own native CPU kernels run in this process, and why not. The library, {@code libmuoncpu.so}
 * (source: {@code muon-core/src/main/c}), holds two sets of Newton–Schulz products; the build puts it into the jar
 * for Linux x86-64 when gcc is at hand:
 * <ul>
 *   <li>the bfloat16 half product {@code out = x·xᵀ} on AVX512_BF16 ({@code muon_cpu_kernels.c}), which libtorch
 *       lacks (it forms {@code x·xᵀ} as a full GEMM);</li>
 *   <li>the float32 half product, polynomial and full products on AVX-512 ({@code muon_f32_kernels.c}) for the
 *       float32 symmetric and Gram kernels, in place of OpenBLAS's {@code ?syrk} (about 0.65 of its GEMM's time for
 *       half the multiply-adds; ours about 0.55) and of its thread pool, which alternates with libtorch's.</li>
 * </ul>
 *
 * <p>Probed once, at the first use: the platform, the library in the jar, libtorch loaded first (the kernels' OpenMP
 * threads are then libtorch's own pool, through the one {@code libgomp.so.1}), and the CPU's AVX512_BF16 (which
 * implies the AVX-512 the float32 kernels use; both were measured on such CPUs only). Without any of them, or with
 * {@code -Ddev.muon.native.disable=true}, bfloat16 products run on libtorch GEMMs and float32 ones on OpenBLAS as
 * before, and the cause is logged once in one sentence.
 *
 * <pre>{@code
 * if (!NativeKernels.isAvailable()) {
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

    /** Where the build puts the library in the jar. */
    static final String LIBRARY_RESOURCE = "/dev/muon/orthogonalize/native/linux-x86_64/libmuoncpu.so";

    private static final System.Logger LOG = System.getLogger(NativeKernels.class.getName());

    private static final Throwable UNAVAILABILITY_CAUSE = load();

    private NativeKernels() {
    }

    private static Throwable load() {
        Throwable cause = probe(Boolean.getBoolean(DISABLE_PROPERTY), System.getProperty("os.name"),
                System.getProperty("os.arch"), NativeKernels.class.getResource(LIBRARY_RESOURCE) != null);
        if (cause == null) {
            try {
                // libtorch first, so that our libgomp.so.1 is libtorch's and its OpenMP pool is the one we use.
                Loader.load(org.bytedeco.pytorch.global.torch.class);
                loadLibrary();
                if (!bfloat16Supported()) {
                    cause = new UnsupportedOperationException("this CPU lacks AVX512_BF16 (it needs an Intel Cooper "
                            + "Lake, Sapphire Rapids or later, or an AMD Zen 4 or later)");
                }
            } catch (Throwable t) {
                cause = t;
            }
        }
        if (cause != null) {
            LOG.log(System.Logger.Level.INFO, "muon-core's native CPU kernels are off, so bfloat16 Newton-Schulz "
                    + "forms its symmetric products from libtorch GEMMs and float32 runs on OpenBLAS (slower): "
                    + cause);
        }
        return cause;
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
     * Whether the native kernel runs in this process (probed once, at the first call of any method here).
     *
     * @return true if the symmetric and Gram kernels' products on the CPU use it in bfloat16 and float32; false
     *         means {@link #unavailabilityCause()} says why
     */
    public static boolean isAvailable() {
        return UNAVAILABILITY_CAUSE == null;
    }

    /**
     * Why the native kernel does not run in this process.
     *
     * @return the cause, or null if it runs
     */
    public static Throwable unavailabilityCause() {
        return UNAVAILABILITY_CAUSE;
    }

    /**
     * Throws unless the native kernel runs in this process: for a deployment that must not fall back silently.
     *
     * @throws UnsupportedOperationException naming the cause, which it carries
     */
    public static void ensureAvailable() {
        if (UNAVAILABILITY_CAUSE != null) {
            throw new UnsupportedOperationException("muon-core's native CPU kernels cannot run here: "
                    + UNAVAILABILITY_CAUSE.getMessage(), UNAVAILABILITY_CAUSE);
        }
    }

    /** Whether this CPU and OS run AVX512_BF16 (and AVX512 F, BW, VL). */
    private static native boolean bfloat16Supported();

    /**
     * Bytes of packing scratch one {@link #bfloat16SelfProduct} call needs for an {@code m × k} matrix.
     *
     * @param m rows
     * @param k columns
     * @return the bytes
     */
    static native long bfloat16PackBytes(int m, int k);

    /**
     * {@code out[i] = x[i]·x[i]ᵀ} for each of {@code batch} matrices, float32 accumulation rounded once to bfloat16,
     * both triangles written and exactly symmetric. No checks on this side of JNI: the caller passes contiguous
     * bfloat16 CPU memory of the stated shapes.
     *
     * @param x       address of {@code batch × m × k} bfloat16 values
     * @param batch   matrices
     * @param m       rows of each
     * @param k       columns of each
     * @param out     address of {@code batch × m × m} bfloat16 values, not overlapping {@code x}
     * @param packed  address of {@link #bfloat16PackBytes}{@code (m, k)} bytes of scratch
     * @param threads the OpenMP threads to use
     */
    static native void bfloat16SelfProduct(long x, int batch, int m, int k, long out, long packed, int threads);

    /**
     * {@code out[i] = a·I + b·s[i] + c·s[i]·s[i]} for each of {@code batch} exactly symmetric matrices, the sum formed
     * in float32 from the unrounded product and rounded once to bfloat16; exactly symmetric. Same contract as
     * {@link #bfloat16SelfProduct} with {@code x = s} and {@code k = m}.
     *
     * @param s       address of {@code batch × m × m} bfloat16 values
     * @param batch   matrices
     * @param m       rows and columns of each
     * @param out     address of {@code batch × m × m} bfloat16 values, not overlapping {@code s}
     * @param packed  address of {@link #bfloat16PackBytes}{@code (m, m)} bytes of scratch
     * @param threads the OpenMP threads to use
     * @param a       the coefficient of {@code I}
     * @param b       the coefficient of {@code s}
     * @param c       the coefficient of {@code s·s}
     */
    static native void bfloat16Polynomial(long s, int batch, int m, long out, long packed, int threads, float a,
                                          float b, float c);

    /**
     * Bytes of packing scratch one float32 call needs: {@link #float32SelfProduct} of an {@code m × n} matrix,
     * {@link #float32Polynomial} with {@code n = m}, or {@link #float32Times} of {@code m × m} by {@code m × n}.
     *
     * @param m rows
     * @param n columns
     * @return the bytes
     */
    static native long float32PackBytes(int m, int n);

    /**
     * {@code out = x·xᵀ} in float32 from the upper triangle's products (about half a GEMM's multiply-adds), both
     * triangles written and exactly symmetric; the same bits for any thread count. No checks on this side of JNI:
     * the caller passes contiguous float32 CPU memory of the stated shapes.
     *
     * @param x          address of {@code m × k} float32 values
     * @param m          rows
     * @param k          columns
     * @param symmetricX whether {@code x} is exactly symmetric ({@code k = m}), which packs it faster
     * @param out        address of {@code m × m} float32 values, not overlapping {@code x}
     * @param packed     address of {@link #float32PackBytes}{@code (m, k)} bytes of scratch
     * @param threads    the OpenMP threads to use
     */
    static native void float32SelfProduct(long x, int m, int k, boolean symmetricX, long out, long packed,
                                          int threads);

    /**
     * {@code out = a·I + b·s + c·s·s} in float32 for the exactly symmetric {@code m × m} {@code s}, the sum formed in
     * the same pass as the half product; exactly symmetric. Same contract as {@link #float32SelfProduct}.
     *
     * @param s       address of {@code m × m} float32 values
     * @param m       rows and columns
     * @param out     address of {@code m × m} float32 values, not overlapping {@code s}
     * @param packed  address of {@link #float32PackBytes}{@code (m, m)} bytes of scratch
     * @param threads the OpenMP threads to use
     * @param a       the coefficient of {@code I}
     * @param b       the coefficient of {@code s}
     * @param c       the coefficient of {@code s·s}
     */
    static native void float32Polynomial(long s, int m, long out, long packed, int threads, float a, float b,
                                         float c);

    /**
     * {@code out = l·r} in float32 for the {@code m × m} {@code l} and the {@code m × n} {@code r}; the same bits for
     * any thread count. Same contract as {@link #float32SelfProduct}.
     *
     * @param l             address of {@code m × m} float32 values
     * @param leftSymmetric whether {@code l} is exactly symmetric, which packs it faster
     * @param r             address of {@code m × n} float32 values
     * @param m             rows of {@code l} and {@code r}
     * @param n             columns of {@code r}
     * @param symmetricOut  ({@code n = m}) whether {@code l} and {@code r} commute, so that the product is
     *                      symmetric in exact arithmetic: then only its upper triangle is formed (half the
     *                      multiply-adds) and mirrored, and the result is exactly symmetric
     * @param out           address of {@code m × n} float32 values, overlapping neither operand
     * @param packed        address of {@link #float32PackBytes}{@code (m, n)} bytes of scratch
     * @param threads       the OpenMP threads to use
     */
    static native void float32Times(long l, boolean leftSymmetric, long r, int m, int n, boolean symmetricOut,
                                    long out, long packed, int threads);

    /**
     * {@code out = g / max(safety·‖g‖_F, eps)} in float32, as the OpenBLAS path computes it: the norm summed in
     * double and rounded to float32, then a multiplication by the float32 reciprocal; the same bits for any thread
     * count. Same contract as {@link #float32SelfProduct}.
     *
     * @param g          address of {@code m × n} float32 values, or with {@code transposed} of {@code n × m} ones
     *                   whose transpose is meant
     * @param m          rows of {@code out}
     * @param n          columns of {@code out}
     * @param transposed whether {@code g} holds the transpose
     * @param out        address of {@code m × n} float32 values, not overlapping {@code g}
     * @param packed     address of {@link #float32PackBytes}{@code (m, n)} bytes of scratch
     * @param threads    the OpenMP threads to use
     * @param safety     the factor on the norm
     * @param eps        the smallest denominator
     */
    static native void float32Normalize(long g, int m, int n, boolean transposed, long out, long packed, int threads,
                                        double safety, double eps);
}
