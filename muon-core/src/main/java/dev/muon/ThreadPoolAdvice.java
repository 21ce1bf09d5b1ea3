package dev.muon;

import java.util.Locale;
import java.util.Optional;

/**
 * The advice about CPU thread pools, logged once per process when a CPU optimizer is built: libtorch's
 * elementwise ops run on OpenMP and our float32/float64 products on OpenBLAS, and each pool's idle threads spin
 * for a while after their work, competing with the other pool's, and with anything else on the machine, for the
 * cores. Unless {@code OMP_WAIT_POLICY} is {@code PASSIVE}, OpenMP's threads spin after each op; unless
 * {@code OPENBLAS_THREAD_TIMEOUT} is small, OpenBLAS's threads spin about 2<sup>28</sup> cycles (a tenth of a
 * second) after each product. Both variables are read when their library starts, so a library cannot set them
 * for the process: only the user can.
 */
final class ThreadPoolAdvice {
    private static final System.Logger LOG = System.getLogger(ThreadPoolAdvice.class.getName());
    /** The largest {@code OPENBLAS_THREAD_TIMEOUT} that keeps OpenBLAS's idle spin under about a microsecond. */
    static final int MAX_QUIET_TIMEOUT = 12;
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
                + "and 94 ms with it). Start the JVM with "
                + "OMP_WAIT_POLICY=PASSIVE in its environment (Getting started, 'Threads on CPUs').");
    }

    /**
     * The warning for a value of {@code OPENBLAS_THREAD_TIMEOUT}, or empty when it is an integer from 1 to
     * {@value #MAX_QUIET_TIMEOUT}. OpenBLAS's idle threads spin 2<sup>value</sup> cycles before they sleep (the value
     * clamped to 4..30; unset, 0 or below, 28): at 12 that is about a microsecond, nothing against a product of a
     * millisecond.
     *
     * @param openBlasThreadTimeout the variable's value, null when unset
     * @return the warning, if one is due
     */
    static Optional<String> forOpenBlasTimeout(String openBlasThreadTimeout) {
        if (openBlasThreadTimeout != null) {
            try {
                int value = Integer.parseInt(openBlasThreadTimeout.trim());
                // OpenBLAS keeps its default for 0 and below (and reads a non-number as 0).
                if (value >= 1 && value <= MAX_QUIET_TIMEOUT) {
                    return Optional.empty();
                }
            } catch (NumberFormatException notANumber) {
                // warned below: OpenBLAS's atoi reads it as 0, its default
            }
        }
        return Optional.of("OPENBLAS_THREAD_TIMEOUT is "
                + (openBlasThreadTimeout == null ? "not set" : "'" + openBlasThreadTimeout + "'")
                + ": OpenBLAS's idle threads spin for about a tenth of a second after each float32/float64 product, "
                + "CPU that other processes on the machine could use (measured on 2 cores: about 100 ms of CPU burnt "
                + "in the 300 ms after a 768x768 float32 Newton-Schulz, 0 ms with the variable at 4; our own step "
                + "was not measurably faster either way). Start the JVM "
                + "with OPENBLAS_THREAD_TIMEOUT=4 in its environment (Getting started, 'Threads on CPUs').");
    }

    /** Logs the warnings for this process's environment, once per process. */
    static void warnOnceForThisProcess() {
        if (logged) {
            return;
        }
        logged = true;
        forWaitPolicy(System.getenv("OMP_WAIT_POLICY")).ifPresent(w -> LOG.log(System.Logger.Level.WARNING, w));
        // A tip, not a warning: the spin costs the machine CPU, but did not measurably slow our own step.
        forOpenBlasTimeout(System.getenv("OPENBLAS_THREAD_TIMEOUT"))
                .ifPresent(w -> LOG.log(System.Logger.Level.INFO, w));
    }
}
