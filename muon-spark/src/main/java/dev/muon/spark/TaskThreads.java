package dev.muon.spark;

import org.bytedeco.pytorch.global.torch;

/**
 * libtorch's and OpenBLAS's thread counts while ranks run in this JVM: each rank sets both to its task's cores (the
 * model's products use OpenBLAS where pytorch-platform brings it; muon-core's own follow libtorch's count), and the
 * counts this JVM had before are put back when its last rank ends. Both counts are process-wide, and the ranks of one
 * executor run at once, so the first rank in records them and the last one out restores them; a rank that restored
 * on its own would hand back the count another rank had set.
 */
final class TaskThreads {
    private static final System.Logger LOG = System.getLogger(TaskThreads.class.getName());

    private static int running;
    private static int torchBefore;
    /** OpenBLAS's count before the first rank, or -1 where OpenBLAS is not on the class path. */
    private static int blasBefore;

    private TaskThreads() {
    }

    /**
     * A rank starts: both counts become {@code threads}.
     *
     * @param threads the task's cores, {@code >= 1}
     */
    static synchronized void enter(int threads) {
        if (running == 0) {
            torchBefore = torch.get_num_threads();
            blasBefore = blasThreads();
        }
        running++;
        torch.set_num_threads(threads);
        if (blasBefore > 0) {
            org.bytedeco.openblas.global.openblas_nolapack.blas_set_num_threads(threads);
        }
    }

    /** A rank ended, however: the last one restores the counts of before the first. */
    static synchronized void exit() {
        running--;
        if (running == 0) {
            torch.set_num_threads(torchBefore);
            if (blasBefore > 0) {
                org.bytedeco.openblas.global.openblas_nolapack.blas_set_num_threads(blasBefore);
            }
        }
    }

    private static int blasThreads() {
        try {
            return org.bytedeco.openblas.global.openblas_nolapack.blas_get_num_threads();
        } catch (LinkageError absent) {
            LOG.log(System.Logger.Level.DEBUG, "OpenBLAS is not available here; only libtorch's threads are set: "
                    + absent);
            return -1;
        }
    }
}
