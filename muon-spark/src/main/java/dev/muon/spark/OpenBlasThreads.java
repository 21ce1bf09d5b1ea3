package dev.muon.spark;

/**
 * Sets OpenBLAS's thread count where OpenBLAS is on the class path (pytorch-platform brings it); muon-core's own
 * products follow libtorch's count anyway, this covers the model's.
 */
final class OpenBlasThreads {
    private static final System.Logger LOG = System.getLogger(OpenBlasThreads.class.getName());

    private OpenBlasThreads() {
    }

    static void set(int threads) {
        try {
            org.bytedeco.openblas.global.openblas_nolapack.blas_set_num_threads(threads);
        } catch (LinkageError absent) {
            LOG.log(System.Logger.Level.DEBUG, "OpenBLAS is not available here; only libtorch's threads are set: "
                    + absent);
        }
    }
}
