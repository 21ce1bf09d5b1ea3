package dev.muon;

import java.util.Locale;
import java.util.Optional;

/**
 * The one warning about CPU thread pools, logged once per process when a CPU optimizer is built: libtorch's
 * elementwise ops run on OpenMP and our float32/float64 products on OpenBLAS, and unless {@code OMP_WAIT_POLICY} is
 * {@code PASSIVE}, OpenMP's threads spin after each op and compete with OpenBLAS's on every core. The environment
 * variable is read by OpenMP when it starts, so a library cannot set it for the process: only the user can.
 */
final class ThreadPoolAdvice {
    private static final System.Logger LOG = System.getLogger(ThreadPoolAdvice.class.getName());
    private static volatile boolean logged;

    private ThreadPoolAdvice() {
    }

    /**
     * The warning for a value of {@code OMP_WAIT_POLICY}, or empty when it is {@code PASSIVE} (any case).
     *
     * @param ompWaitPolicy the variable's value, null when unset
     * @return the warning, if one is due
     */
    static Optional<String> forWaitPolicy(String ompWaitPolicy) {
        if (ompWaitPolicy != null && ompWaitPolicy.trim().toUpperCase(Locale.ROOT).equals("PASSIVE")) {
            return Optional.empty();
        }
        return Optional.of("OMP_WAIT_POLICY is " + (ompWaitPolicy == null ? "not set" : "'" + ompWaitPolicy + "'")
                + ": libtorch's OpenMP threads spin after each elementwise op and compete with the OpenBLAS threads "
                + "of the next product (measured on 2 cores: Newton-Schulz at 768x768 took 320 ms without PASSIVE "
                + "and 94 ms with it; docs/benchmarks.md, 'the two thread pools'). Start the JVM with "
                + "OMP_WAIT_POLICY=PASSIVE in its environment.");
    }

    /** Logs the warning for this process's environment, once per process. */
    static void warnOnceForThisProcess() {
        if (logged) {
            return;
        }
        logged = true;
        forWaitPolicy(System.getenv("OMP_WAIT_POLICY")).ifPresent(w -> LOG.log(System.Logger.Level.WARNING, w));
    }
}
