package dev.muon.orthogonalize;

import dev.muon.internal.TorchNatives;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Optional;

/**
 * muon-core's native float32 Newton–Schulz products ({@code libmuoncpu.so}, the kernels {@link NativeKernels} runs
 * on libtorch's tensors: the half product {@code x·xᵀ}, the polynomial {@code a·I + b·s + c·s·s} formed with it,
 * the product {@code l·r} and its half form for commuting symmetric matrices, the normalisation) for a JVM without
 * JavaCPP, such as muon-djl's on DJL's libtorch: the products take direct {@link ByteBuffer}s, whose addresses the
 * library reads through JNI ({@code GetDirectBufferAddress}). Each call checks every buffer (direct, native order,
 * its capacity) before native code sees it.
 *
 * <p>Probed once, at the first use, and never in a JVM that does not ask, by the one loader {@code NativeKernels}
 * shares, with its causes: the platform (Linux x86-64), the library in the jar, {@code -Ddev.muon.native.disable},
 * and what the CPU runs; the variant follows {@code -Ddev.muon.native.isa} ({@code auto}: AVX-512 with
 * AVX512_BF16, else AVX2 with FMA). In a JVM without JavaCPP the library is copied from the jar and loaded with
 * {@code System.load}; it needs {@code libgomp.so.1}, which in a DJL JVM is the one DJL's libtorch loaded, so the
 * products share libtorch's OpenMP runtime.
 *
 * <pre>{@code
 * if (!BufferKernels.isAvailable()) {
 *     System.out.println("NDArray products: " + BufferKernels.unavailabilityCause());
 * }
 * }</pre>
 */
public final class BufferKernels {
    static {
        // As every public type of the API: see TorchNatives (without JavaCPP, as in muon-djl, it does nothing).
        TorchNatives.extract();
    }

    private BufferKernels() {
    }

    /** The loader's state, probed (the library loaded) at the first call of any method here, never before. */
    private static NativeLibrary.State state() {
        return NativeLibrary.state();
    }

    /** The code of the variant that runs; call only where it runs. */
    private static int variantCode() {
        return state().variant().code;
    }

    /**
     * Whether the native products run in this JVM (probed at the first call).
     *
     * @return true if they do; false means {@link #unavailabilityCause()} says why
     */
    public static boolean isAvailable() {
        return state().cause() == null;
    }

    /**
     * Why the native products do not run in this JVM.
     *
     * @return the cause, or null if they run
     */
    public static Throwable unavailabilityCause() {
        return state().cause();
    }

    /**
     * The variant that runs.
     *
     * @return {@code avx512} or {@code avx2}, or empty where none runs
     */
    public static Optional<String> variant() {
        return Optional.ofNullable(state().variant()).map(v -> v.propertyValue);
    }

    /**
     * Throws unless the native products run: for a setting that asks for them.
     *
     * @throws UnsupportedOperationException naming the cause, which it carries
     */
    public static void ensureAvailable() {
        NativeLibrary.ensureAvailable();
    }

    /**
     * A direct buffer in native order of at least {@code bytes}, 64-byte aligned slack included, for
     * {@link #packBytes} scratch or a matrix.
     *
     * @param bytes the bytes needed
     * @return a new direct buffer
     */
    public static ByteBuffer allocate(long bytes) {
        return ByteBuffer.allocateDirect(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
    }

    /**
     * Bytes of packing scratch one product of an {@code m × n} result needs.
     *
     * @param m rows
     * @param n columns
     * @return the bytes
     */
    public static long packBytes(int m, int n) {
        ensureAvailable();
        return float32PackBytes(variantCode(), m, n);
    }

    /**
     * {@code out = x·xᵀ} for the row-major {@code m × k} {@code x}; both triangles written, exactly symmetric.
     *
     * @param x       {@code m·k} floats
     * @param m       rows
     * @param k       columns
     * @param out     {@code m·m} floats, apart from {@code x}
     * @param packed  {@link #packBytes}{@code (m, k)} bytes of scratch
     * @param threads OpenMP threads
     */
    public static void selfProduct(ByteBuffer x, int m, int k, ByteBuffer out, ByteBuffer packed, int threads) {
        selfProduct(x, "x", m, k, false, out, packed, threads);
    }

    /**
     * {@code out = a·I + b·s + c·s·s} for the exactly symmetric {@code m × m} {@code s}.
     *
     * @param s       {@code m·m} floats
     * @param m       rows and columns
     * @param out     {@code m·m} floats, apart from {@code s}
     * @param packed  {@link #packBytes}{@code (m, m)} bytes of scratch
     * @param threads OpenMP threads
     * @param a       coefficient of {@code I}
     * @param b       coefficient of {@code s}
     * @param c       coefficient of {@code s·s}
     */
    public static void polynomial(ByteBuffer s, int m, ByteBuffer out, ByteBuffer packed, int threads, float a,
                                  float b, float c) {
        check(s, (long) m * m, "s");
        check(out, (long) m * m, "out");
        checkScratch(packed, m, m);
        require(float32Polynomial(variantCode(), s, m, out, packed, threads, a, b, c));
    }

    /**
     * {@code out = l·r} for the exactly symmetric {@code m × m} {@code l} and the {@code m × n} {@code r}.
     *
     * @param l       {@code m·m} floats
     * @param r       {@code m·n} floats
     * @param m       rows
     * @param n       columns of {@code r}
     * @param out     {@code m·n} floats, apart from both
     * @param packed  {@link #packBytes}{@code (m, n)} bytes of scratch
     * @param threads OpenMP threads
     */
    public static void symmetricTimes(ByteBuffer l, ByteBuffer r, int m, int n, ByteBuffer out, ByteBuffer packed,
                                      int threads) {
        product(l, "l", true, r, "r", m, n, false, out, packed, threads);
    }

    /**
     * {@code out = s·sᵀ} for the exactly symmetric {@code m × m} {@code s} (packed as such, faster than
     * {@link #selfProduct}); both triangles written, exactly symmetric.
     *
     * @param s       {@code m·m} floats
     * @param m       rows and columns
     * @param out     {@code m·m} floats, apart from {@code s}
     * @param packed  {@link #packBytes}{@code (m, m)} bytes of scratch
     * @param threads OpenMP threads
     */
    public static void square(ByteBuffer s, int m, ByteBuffer out, ByteBuffer packed, int threads) {
        selfProduct(s, "s", m, m, true, out, packed, threads);
    }

    /**
     * {@code out = s·t} for the exactly symmetric {@code m × m} {@code s} and an {@code m × m} {@code t} that
     * commutes with it (in the Gram iteration both are polynomials in one Gram matrix, so the product is symmetric in
     * exact arithmetic): the upper triangle only, about half the multiply-adds, mirrored, so the result is exactly
     * symmetric.
     *
     * @param s       {@code m·m} floats
     * @param t       {@code m·m} floats
     * @param m       rows and columns
     * @param out     {@code m·m} floats, apart from both
     * @param packed  {@link #packBytes}{@code (m, m)} bytes of scratch
     * @param threads OpenMP threads
     */
    public static void commutingTimes(ByteBuffer s, ByteBuffer t, int m, ByteBuffer out, ByteBuffer packed,
                                      int threads) {
        product(s, "s", true, t, "t", m, m, true, out, packed, threads);
    }

    /**
     * {@code out = l·r} for the {@code m × m} {@code l} and the {@code m × n} {@code r}.
     *
     * @param l       {@code m·m} floats
     * @param r       {@code m·n} floats
     * @param m       rows
     * @param n       columns of {@code r}
     * @param out     {@code m·n} floats, apart from both
     * @param packed  {@link #packBytes}{@code (m, n)} bytes of scratch
     * @param threads OpenMP threads
     */
    public static void times(ByteBuffer l, ByteBuffer r, int m, int n, ByteBuffer out, ByteBuffer packed,
                             int threads) {
        product(l, "l", false, r, "r", m, n, false, out, packed, threads);
    }

    /**
     * {@code out = g / max(safety·‖g‖_F, eps)} for the {@code m × n} {@code out}, {@code g} of its shape or, with
     * {@code transposed}, the row-major {@code n × m} matrix whose transpose is meant.
     *
     * @param g          {@code m·n} floats
     * @param m          rows of {@code out}
     * @param n          columns of {@code out}
     * @param transposed whether {@code g} holds the transpose
     * @param out        {@code m·n} floats, apart from {@code g}
     * @param packed     {@link #packBytes}{@code (m, n)} bytes of scratch
     * @param threads    OpenMP threads
     * @param safety     the factor on the norm
     * @param eps        the smallest denominator
     */
    public static void normalize(ByteBuffer g, int m, int n, boolean transposed, ByteBuffer out, ByteBuffer packed,
                                 int threads, double safety, double eps) {
        check(g, (long) m * n, "g");
        check(out, (long) m * n, "out");
        checkScratch(packed, m, n);
        require(float32Normalize(variantCode(), g, m, n, transposed, out, packed, threads, safety, eps));
    }

    /** {@code out = x·xᵀ} for the {@code m × k} {@code x} (named {@code name} in a refusal), checked first. */
    private static void selfProduct(ByteBuffer x, String name, int m, int k, boolean symmetricX, ByteBuffer out,
                                    ByteBuffer packed, int threads) {
        check(x, (long) m * k, name);
        check(out, (long) m * m, "out");
        checkScratch(packed, m, k);
        require(float32SelfProduct(variantCode(), x, m, k, symmetricX, out, packed, threads));
    }

    /**
     * {@code out = l·r} for the {@code m × m} {@code l} and the {@code m × n} {@code r} (named {@code lName} and
     * {@code rName} in a refusal), checked first; {@code symmetricOut} forms the upper triangle and mirrors it.
     */
    private static void product(ByteBuffer l, String lName, boolean leftSymmetric, ByteBuffer r, String rName, int m,
                                int n, boolean symmetricOut, ByteBuffer out, ByteBuffer packed, int threads) {
        check(l, (long) m * m, lName);
        check(r, (long) m * n, rName);
        check(out, (long) m * n, "out");
        checkScratch(packed, m, n);
        require(float32Times(variantCode(), l, leftSymmetric, r, m, n, symmetricOut, out, packed, threads));
    }

    /** A buffer native code may read or write {@code floats} floats of, from its address. */
    private static void check(ByteBuffer b, long floats, String what) {
        if (!b.isDirect() || b.order() != ByteOrder.nativeOrder() || b.capacity() < floats * Float.BYTES) {
            throw new IllegalArgumentException(what + " must be a direct buffer in native order of at least "
                    + floats * Float.BYTES + " bytes, got " + (b.isDirect() ? "" : "a heap buffer of ")
                    + b.capacity() + " bytes");
        }
    }

    private static void checkScratch(ByteBuffer packed, int m, int n) {
        long need = packBytes(m, n);
        if (!packed.isDirect() || packed.capacity() < need) {
            throw new IllegalArgumentException("packed must be a direct buffer of at least " + need + " bytes, got "
                    + packed.capacity());
        }
    }

    private static void require(boolean called) {
        if (!called) {
            throw new IllegalStateException("a buffer handed to the native products has no address");
        }
    }

    private static native long float32PackBytes(int variant, int m, int n);

    private static native boolean float32SelfProduct(int variant, ByteBuffer x, int m, int k, boolean symmetricX,
                                                     ByteBuffer out, ByteBuffer packed, int threads);

    private static native boolean float32Polynomial(int variant, ByteBuffer s, int m, ByteBuffer out,
                                                    ByteBuffer packed, int threads, float a, float b, float c);

    private static native boolean float32Times(int variant, ByteBuffer l, boolean leftSymmetric, ByteBuffer r,
                                               int m, int n, boolean symmetricOut, ByteBuffer out, ByteBuffer packed,
                                               int threads);

    private static native boolean float32Normalize(int variant, ByteBuffer g, int m, int n, boolean transposed,
                                                   ByteBuffer out, ByteBuffer packed, int threads, double safety,
                                                   double eps);
}
