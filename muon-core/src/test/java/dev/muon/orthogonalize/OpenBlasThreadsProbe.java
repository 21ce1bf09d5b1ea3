package dev.muon.orthogonalize;

/** Reads OpenBLAS's thread count for tests outside this package. */
public final class OpenBlasThreadsProbe {
    private OpenBlasThreadsProbe() {
    }

    /**
     * OpenBLAS's current thread count.
     *
     * @return the count
     */
    public static int openBlasThreads() {
        return OpenBlas.threads();
    }

    /**
     * Pins OpenBLAS's thread count to libtorch's (no contention sampling) until called with false.
     *
     * @param paused whether sampling is off
     */
    public static void pauseContentionSampling(boolean paused) {
        CpuContention.pausedForTests = paused;
    }
}
