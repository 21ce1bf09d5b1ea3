package dev.muon.internal;

import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Puts libtorch's natives into the JavaCPP cache before any test class is loaded, so that a test JVM on an empty
 * cache never maps a system-wide libtorch ({@link TorchNatives} says why). Registered through
 * {@code META-INF/services}, so every module whose tests have muon-core's test jar on the class path gets it.
 *
 * <p>Where the bindings are not on the class path it does nothing: muon-djl's tests take this test jar for its
 * golden-file reader in a JVM that runs DJL's libtorch and must never load bytedeco's.
 */
public final class TorchNativesSession implements LauncherSessionListener {
    /** Used by the service loader. */
    public TorchNativesSession() {
    }

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        if (bindingsPresent()) {
            TorchNatives.extract();
        }
    }

    /** Whether the bindings are on the class path; asks without initializing the class, so nothing native loads. */
    private static boolean bindingsPresent() {
        return TorchNatives.onClassPath("org.bytedeco.pytorch.Tensor", TorchNativesSession.class.getClassLoader());
    }
}
