package dev.muon.internal;

import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * Puts libtorch's natives into the JavaCPP cache before any test class is loaded, so that a test JVM on an empty
 * cache never maps a system-wide libtorch ({@link TorchNatives} says why). Registered through
 * {@code META-INF/services}, so every module whose tests have muon-core's test jar on the class path gets it.
 */
public final class TorchNativesSession implements LauncherSessionListener {
    /** Used by the service loader. */
    public TorchNativesSession() {
    }

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        TorchNatives.extract();
    }
}
