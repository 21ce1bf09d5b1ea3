package dev.muon.orthogonalize;

import dev.muon.internal.SystemSwitch;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * The one loader of {@code libmuoncpu.so}, behind its three Java faces: {@link NativeKernels} (the kernels on
 * libtorch's tensors, through JavaCPP), {@link BufferKernels} (the float32 products on direct buffers, for a JVM
 * without JavaCPP such as muon-djl's) and {@code dev.muon.NativeUpdateKernels} (the momentum and update passes).
 * It owns what they share, written once: the properties, the probe and its causes, the library's loading, what the
 * CPU runs, the variant's selection, and the state they give, found once per JVM at the first face's first ask.
 *
 * <p>Bindings-free, so that muon-djl can load it without bytedeco: where JavaCPP's libtorch preset is on the class
 * path, the library is loaded after libtorch, from JavaCPP's cache ({@link JavaCppLibrary}, the only class here that
 * touches JavaCPP, and only on that path); elsewhere from a temporary copy. Either way it is loaded once per JVM,
 * whichever face asks first.
 */
final class NativeLibrary {
    /** Set to {@code true} to force libtorch's products, e.g. to compare the two. */
    static final String DISABLE_PROPERTY = "dev.muon.native.disable";

    /** {@code auto}, {@code avx512} or {@code avx2}: which variant runs (see {@link NativeKernels}). */
    static final String ISA_PROPERTY = "dev.muon.native.isa";

    /** Where the build puts the library in the jar. */
    static final String LIBRARY_RESOURCE = "/dev/muon/orthogonalize/native/linux-x86_64/libmuoncpu.so";

    /** JavaCPP's libtorch preset: where it is on the class path, libtorch is loaded before the library. */
    private static final String JAVACPP_TORCH = "org/bytedeco/pytorch/global/torch.class";

    /** One instruction set's build of the kernels, as the C side knows it; {@code NativeKernels.Variant}'s own. */
    enum Isa {
        AVX512("avx512", "AVX-512 F, BW and VL with AVX512_BF16", 0),
        AVX2("avx2", "AVX2 and FMA", 1);

        /** The value of {@value #ISA_PROPERTY} that asks for it. */
        final String propertyValue;
        /** The CPU features it needs. */
        final String features;
        /** The code the C side dispatches on ({@code MUON_VARIANT_*} in {@code muon_kernels.h}). */
        final int code;

        Isa(String propertyValue, String features, int code) {
            this.propertyValue = propertyValue;
            this.features = features;
            this.code = code;
        }
    }

    /**
     * What the probe found: the variant that runs (null: none, and why), every variant this CPU runs, and why the
     * library did not load (null: it did).
     *
     * @param variant   the variant that runs, or null
     * @param cause     why none runs, or null
     * @param runnable  the variants this CPU runs (empty if the library did not load)
     * @param loadCause why the library did not load, or null
     * @param requested {@value #ISA_PROPERTY}'s value, or null where unset
     */
    record State(Isa variant, Throwable cause, Set<Isa> runnable, Throwable loadCause, String requested) {
        /** Whether {@value #ISA_PROPERTY} asked for a variant by name (or for something else than {@code auto}). */
        boolean explicit() {
            return requested != null && !requested.trim().equalsIgnoreCase("auto");
        }
    }

    /** Found at the first call of {@link #state()}, never before: a JVM that asks nothing loads nothing. */
    private static final class Holder {
        static final State STATE = load();
    }

    private NativeLibrary() {
    }

    /**
     * What the probe found, probing (and loading the library) at the first call.
     *
     * @return the state
     */
    static State state() {
        return Holder.STATE;
    }

    private static State load() {
        String requested = System.getProperty(ISA_PROPERTY);
        Throwable cause;
        try {
            cause = probe(SystemSwitch.isOn(DISABLE_PROPERTY), System.getProperty("os.name"),
                    System.getProperty("os.arch"), NativeLibrary.class.getResource(LIBRARY_RESOURCE) != null);
        } catch (IllegalArgumentException e) {
            // A switch set to neither true nor false: the kernels stay off, and this says why (as for the ISA).
            cause = e;
        }
        Set<Isa> runnable = EnumSet.noneOf(Isa.class);
        Isa variant = null;
        Throwable loadCause = cause;
        if (cause == null) {
            try {
                loadLibrary();
                for (Isa v : Isa.values()) {
                    if (supports(v.code)) {
                        runnable.add(v);
                    }
                }
            } catch (Throwable t) {
                cause = t;
                loadCause = t;
                runnable.clear();
            }
        }
        if (cause == null) {
            try {
                variant = select(requested, runnable);
            } catch (IllegalArgumentException | UnsupportedOperationException e) {
                cause = e;
            }
        }
        return new State(variant, cause, Collections.unmodifiableSet(runnable), loadCause, requested);
    }

    /**
     * Why the native kernels cannot run, from what can be known before loading them; null if nothing stands in the
     * way.
     *
     * @param disabled     whether {@value #DISABLE_PROPERTY} is set
     * @param os           {@code os.name}
     * @param arch         {@code os.arch}
     * @param libraryInJar whether the jar holds the library
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
    static Isa select(String requested, Set<Isa> runnable) {
        String value = requested == null ? "auto" : requested.trim();
        if (value.equalsIgnoreCase("auto")) {
            for (Isa v : Isa.values()) {
                if (runnable.contains(v)) {
                    return v;
                }
            }
            throw new UnsupportedOperationException("this CPU lacks " + Isa.AVX2.features
                    + " (an Intel Haswell or later, or an AMD Excavator, Zen or later, has them)");
        }
        for (Isa v : Isa.values()) {
            if (value.equalsIgnoreCase(v.propertyValue)) {
                if (!runnable.contains(v)) {
                    throw new UnsupportedOperationException("-D" + ISA_PROPERTY + "=" + requested + " asks for the "
                            + v.propertyValue + " kernels, and this CPU lacks " + v.features);
                }
                return v;
            }
        }
        throw new IllegalArgumentException(ISA_PROPERTY + " must be auto, avx512 or avx2, got '" + requested + "'");
    }

    /**
     * Throws unless the native kernels run in this process.
     *
     * @throws UnsupportedOperationException naming the cause, which it carries
     */
    static void ensureAvailable() {
        Throwable cause = state().cause();
        if (cause != null) {
            throw new UnsupportedOperationException("muon-core's native CPU kernels cannot run here: "
                    + cause.getMessage(), cause);
        }
    }

    /**
     * Why {@code variant} cannot be called in this process, whichever variant was selected: the library did not
     * load, or this CPU lacks its instructions; null if it can.
     */
    static Throwable variantUnavailabilityCause(Isa variant) {
        State state = state();
        if (state.loadCause() != null) {
            return state.loadCause();
        }
        return state.runnable().contains(variant) ? null
                : new UnsupportedOperationException("this CPU lacks " + variant.features);
    }

    /**
     * Loads the library once for this JVM: after libtorch, from JavaCPP's cache, where JavaCPP's libtorch preset is
     * on the class path (so that the library's {@code libgomp.so.1} is libtorch's, and its OpenMP pool the one the
     * kernels use); elsewhere, as in muon-djl beside DJL's libtorch, from a temporary copy.
     */
    private static void loadLibrary() throws IOException {
        ClassLoader loader = NativeLibrary.class.getClassLoader();
        if (loader != null && loader.getResource(JAVACPP_TORCH) != null) {
            System.load(JavaCppLibrary.afterLibtorch(LIBRARY_RESOURCE).getAbsolutePath());
            return;
        }
        try (InputStream in = NativeLibrary.class.getResourceAsStream(LIBRARY_RESOURCE)) {
            if (in == null) {
                throw new IOException("no " + LIBRARY_RESOURCE + " on the class path");
            }
            Path file = Files.createTempFile("libmuoncpu-", ".so");
            try {
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                System.load(file.toAbsolutePath().toString());
            } finally {
                // Loaded (or not), the file is no longer needed: Linux keeps a loaded library's pages.
                Files.deleteIfExists(file);
            }
        }
    }

    /** Whether this CPU and OS run the variant's instructions. */
    private static native boolean supports(int variant);
}
