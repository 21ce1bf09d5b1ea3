package dev.muon.cuda;

import dev.muon.internal.SystemSwitch;
import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.global.torch_cuda;

import java.util.Objects;

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
    /**
     * Set to {@code true} to keep libtorch's momentum and parameter-update ops where the fused kernels
     * ({@link FusedUpdates}) would run; read when an optimizer is built.
     */
    public static final String DISABLE_FUSED_UPDATES_PROPERTY = "dev.muon.cuda.disableFusedUpdates";

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
     * The index of the device an object loads its kernels on, once it is known to be a CUDA device and the kernels
     * to run here.
     *
     * @param device the device; without an index, device 0
     * @return its index
     * @throws IllegalArgumentException      if {@code device} is not a CUDA device
     * @throws UnsupportedOperationException if {@link #isAvailable()} is false
     */
    static int kernelDeviceIndex(Device device) {
        Objects.requireNonNull(device, "device must not be null");
        if (!device.is_cuda()) {
            throw new IllegalArgumentException("device must be a CUDA device, got " + device.str().getString());
        }
        ensureAvailable();
        return device.has_index() ? device.index() : 0;
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
        boolean disabled;
        try {
            disabled = SystemSwitch.parse(DISABLE_PROPERTY, disableProperty);
        } catch (IllegalArgumentException e) {
            return e;
        }
        if (disabled) {
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
            return withoutCuda(t, loader.getResource(GPU_NATIVES_RESOURCE) != null,
                    System.getProperty(PLATFORM_EXTENSION_PROPERTY));
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

    /** A file of libtorch's GPU natives jar ({@code org.bytedeco:pytorch:<version>:linux-x86_64-gpu}). */
    static final String GPU_NATIVES_RESOURCE = "org/bytedeco/pytorch/linux-x86_64-gpu/libjnitorch_cuda.so";

    /** JavaCPP's choice between the CPU and the GPU natives of a preset. */
    static final String PLATFORM_EXTENSION_PROPERTY = "org.bytedeco.javacpp.platform.extension";

    /**
     * Why libtorch's CUDA side did not load, told apart by what is at hand, so that the message names the step
     * that is missing: the GPU natives jar, the property that makes JavaCPP load it, or (both there) the CUDA
     * libraries those natives link against, which no jar brings.
     *
     * @param error              what touching libtorch's CUDA side threw
     * @param gpuNativesOnPath   whether the class path holds the GPU natives ({@link #GPU_NATIVES_RESOURCE})
     * @param platformExtension  the value of {@value #PLATFORM_EXTENSION_PROPERTY}, or null
     * @return the cause, carrying {@code error}
     */
    static UnsupportedOperationException withoutCuda(Throwable error, boolean gpuNativesOnPath,
                                                     String platformExtension) {
        String message;
        if (!gpuNativesOnPath) {
            message = "libtorch was loaded without CUDA (" + brief(error) + "); put "
                    + "org.bytedeco:pytorch:<version>:linux-x86_64-gpu on the class path and run with -D"
                    + PLATFORM_EXTENSION_PROPERTY + "=-gpu";
        } else if (!"-gpu".equals(platformExtension)) {
            message = "libtorch's GPU natives are on the class path, but JavaCPP loaded its CPU build ("
                    + brief(error) + "); run with -D" + PLATFORM_EXTENSION_PROPERTY + "=-gpu";
        } else {
            message = "libtorch's GPU natives are on the class path and selected, but did not load (" + brief(error)
                    + "); the CUDA libraries they link against (cuBLAS, cuDNN, NCCL, ...) must be on the library "
                    + "path: the GPU test bundle's run.sh libs lists which are missing (CUDA documentation, "
                    + "'GPU test bundle for a machine without Java or Maven')";
        }
        return new UnsupportedOperationException(message, error);
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
