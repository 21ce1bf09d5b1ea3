package dev.muon.cuda;

import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.global.torch_cuda;

import static org.bytedeco.cuda.global.cudart.CUDA_SUCCESS;
import static org.bytedeco.cuda.global.cudart.cuInit;

/**
 * Whether muon-cuda's kernels can run in this JVM, probed once (in the manner of Netty's {@code Epoll}).
 *
 * <p>The probe checks, in order: the {@value #DISABLE_PROPERTY} system property; that the jar holds the
 * compiled kernels (it does not when it was built without nvcc); that libtorch was loaded with CUDA and sees
 * a device; that the CUDA driver API bindings ({@code org.bytedeco:cuda}) load; that {@code cuInit} succeeds.
 * The first failure becomes {@link #unavailabilityCause()}, whose message is one actionable sentence.
 *
 * <pre>{@code
 * if (!CudaSupport.isAvailable()) {
 *     System.err.println("CUDA kernels off: " + CudaSupport.unavailabilityCause().getMessage());
 * }
 * }</pre>
 */
public final class CudaSupport {
    static {
        // Before anything here loads libtorch: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
    }

    /** Set to {@code true} to force libtorch's Newton–Schulz even where the kernels could run. */
    public static final String DISABLE_PROPERTY = "dev.muon.cuda.disable";
    /** Set to {@code true} to use the kernels at every size, ignoring the measured thresholds. */
    public static final String FORCE_PROPERTY = "dev.muon.cuda.forceKernels";

    private static final System.Logger LOG = System.getLogger(CudaSupport.class.getName());
    private static final Throwable UNAVAILABILITY_CAUSE = probe(System.getProperty(DISABLE_PROPERTY),
            CudaSupport.class.getClassLoader());
    private static volatile boolean fallbackLogged;

    private CudaSupport() {
    }

    /**
     * Whether the kernels can run here.
     *
     * @return true if {@link #unavailabilityCause()} is null
     */
    public static boolean isAvailable() {
        return UNAVAILABILITY_CAUSE == null;
    }

    /**
     * Why the kernels cannot run here.
     *
     * @return the cause, or null if they can
     */
    public static Throwable unavailabilityCause() {
        return UNAVAILABILITY_CAUSE;
    }

    /**
     * Fails unless the kernels can run here.
     *
     * @throws UnsupportedOperationException carrying {@link #unavailabilityCause()} if they cannot
     */
    public static void ensureAvailable() {
        if (UNAVAILABILITY_CAUSE != null) {
            throw new UnsupportedOperationException("muon-cuda kernels are unavailable: "
                    + UNAVAILABILITY_CAUSE.getMessage(), UNAVAILABILITY_CAUSE);
        }
    }

    /**
     * Logs, once per JVM, why CUDA parameters use libtorch's Newton–Schulz.
     *
     * @param why the reason, one actionable sentence
     */
    static void logFallbackOnce(String why) {
        if (!fallbackLogged) {
            fallbackLogged = true;
            LOG.log(System.Logger.Level.INFO, "muon-cuda: Newton-Schulz runs on libtorch ops because " + why);
        }
    }

    /**
     * The probe, separated from the cached result so that tests can run it with other inputs.
     *
     * @param disableProperty the value of {@value #DISABLE_PROPERTY}, or null
     * @param loader          where to look for the kernel images
     * @return the first reason the kernels cannot run, or null
     */
    static Throwable probe(String disableProperty, ClassLoader loader) {
        if (Boolean.parseBoolean(disableProperty)) {
            return new UnsupportedOperationException("-D" + DISABLE_PROPERTY + "=" + disableProperty
                    + " forces the libtorch fallback; remove it to use the CUDA kernels");
        }
        for (String image : CudaKernels.IMAGES) {
            if (loader.getResource(image) == null) {
                return new UnsupportedOperationException("this muon-cuda jar holds no compiled kernels (" + image
                        + " is missing) because it was built without nvcc; rebuild it with the CUDA toolkit's nvcc "
                        + "on PATH");
            }
        }
        try {
            if (torch_cuda.device_count() < 1) {
                return new UnsupportedOperationException("libtorch sees no CUDA device; run on a machine with an "
                        + "NVIDIA GPU and driver");
            }
        } catch (Throwable t) {
            return new UnsupportedOperationException("libtorch was loaded without CUDA (" + brief(t)
                    + "); put org.bytedeco:pytorch:<version>:linux-x86_64-gpu on the class path and run with "
                    + "-Dorg.bytedeco.javacpp.platform.extension=-gpu", t);
        }
        try {
            int result = cuInit(0);
            if (result != CUDA_SUCCESS) {
                return new UnsupportedOperationException("cuInit failed with CUresult " + result
                        + "; install an NVIDIA driver recent enough for CUDA 13");
            }
        } catch (Throwable t) {
            return new UnsupportedOperationException("the CUDA driver API bindings did not load (" + brief(t)
                    + "); put org.bytedeco:cuda:13.1-9.19-1.5.13:linux-x86_64 on the class path", t);
        }
        return null;
    }

    /** The error's type and the start of its message, without the library path that a link error lists. */
    private static String brief(Throwable t) {
        String message = String.valueOf(t.getMessage());
        int cut = message.indexOf(" in java.library.path");
        if (cut >= 0) {
            message = message.substring(0, cut);
        }
        if (message.length() > 160) {
            message = message.substring(0, 160) + "...";
        }
        return t.getClass().getSimpleName() + ": " + message;
    }
}
