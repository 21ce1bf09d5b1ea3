package dev.muon.bench;

import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.lang.management.ManagementFactory;

/**
 * How much CPU each pool's idle threads burn after their work: this process's CPU time while its only thread
 * sleeps 300 ms, after a 768×768 float32 Newton–Schulz (OpenBLAS's pool) and after one elementwise op
 * (libtorch's OpenMP pool), averaged over 5 rounds. Run it in the environment under test, e.g.
 * {@code OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java -cp muon-bench/target/benchmarks.jar
 * dev.muon.bench.IdleSpin}. CPU time, not wall time, so a busy machine does not change what it shows.
 */
public final class IdleSpin {
    private static final int ROUNDS = 5;
    private static final long SLEEP_MS = 300;

    private IdleSpin() {
    }

    /**
     * Prints the CPU milliseconds burnt during the sleeps.
     *
     * @param args none
     * @throws InterruptedException if interrupted while sleeping
     */
    public static void main(String[] args) throws InterruptedException {
        TorchNatives.extract();
        try (PointerScope scope = new PointerScope()) {
            NewtonSchulz ns = new NewtonSchulz(NewtonSchulzConfig.defaults());
            Tensor matrix = torch.randn(768, 768);
            Tensor large = torch.randn(2048, 2048);
            double blas = idleCpuMsAfter(() -> ns.orthogonalize(matrix));
            double openMp = idleCpuMsAfter(() -> large.mul_(new Scalar(1.0001)));
            System.out.printf("OMP_WAIT_POLICY=%s OPENBLAS_THREAD_TIMEOUT=%s, %d libtorch threads: CPU ms burnt "
                            + "in %d ms of sleep after a 768x768 float32 Newton-Schulz (OpenBLAS) %.1f, after an "
                            + "elementwise op (OpenMP) %.1f%n", System.getenv("OMP_WAIT_POLICY"),
                    System.getenv("OPENBLAS_THREAD_TIMEOUT"), torch.get_num_threads(), SLEEP_MS, blas, openMp);
        }
    }

    /** The mean CPU time of this process during a sleep after {@code work}; the first round is a warm-up. */
    static double idleCpuMsAfter(Runnable work) throws InterruptedException {
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        double total = 0;
        for (int round = 0; round <= ROUNDS; round++) {
            try (PointerScope call = new PointerScope()) {
                work.run();
            }
            long before = os.getProcessCpuTime();
            Thread.sleep(SLEEP_MS);
            long after = os.getProcessCpuTime();
            if (round > 0) {
                total += (after - before) / 1e6;
            }
        }
        return total / ROUNDS;
    }
}
