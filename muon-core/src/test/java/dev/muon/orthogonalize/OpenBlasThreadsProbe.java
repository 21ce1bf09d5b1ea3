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
}
