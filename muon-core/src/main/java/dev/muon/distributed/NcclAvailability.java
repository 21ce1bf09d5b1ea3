package dev.muon.distributed;

import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.Backend;
import org.bytedeco.pytorch.TCPStore;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.nccl.ProcessGroupNCCL;

/** Probes once whether NCCL can run here, and creates NCCL process groups; kept apart so that Gloo never loads it. */
final class NcclAvailability {
    private static final String CAUSE = probe();

    private NcclAvailability() {
    }

    /** Null when NCCL is usable, else why not. */
    static String unavailabilityCause() {
        return CAUSE;
    }

    private static String probe() {
        try {
            if (!torch.cuda_is_available()) {
                return "libtorch sees no CUDA device (CPU natives, or no GPU)";
            }
            ProcessGroupNCCL.Options.create().close();
            return null;
        } catch (LinkageError e) {
            // The CPU natives have the Java class but not its native half.
            return "the loaded libtorch natives have no NCCL (use org.bytedeco:pytorch with the "
                    + "linux-x86_64-gpu classifier, the muon-cuda module's gpu profile): " + e;
        }
    }

    static Backend newProcessGroup(TCPStore store, GroupConfig config) {
        ProcessGroupNCCL.Options options = ProcessGroupNCCL.Options.create();
        options.timeout(new Milliseconds(config.timeout().toMillis()));
        return new ProcessGroupNCCL(store, config.rank(), config.worldSize(), options);
    }
}
