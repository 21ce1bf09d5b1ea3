package dev.muon.orthogonalize;

import dev.muon.internal.SystemSwitch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.OptionalInt;

/**
 * How many cores other processes keep busy, so that OpenBLAS does not run more threads than there are cores left.
 *
 * <p>Why: OpenBLAS's threads wait for each other by spinning inside every product. When another process keeps a
 * core busy, one of our threads shares it, and the others spin while it is descheduled. Measured on 2 cores with
 * one core kept busy (the GPT-2-small-width float32 {@code MuonAdamW} step, JMH): 5.8 s with two threads against
 * 3.5 s with one, where the quiet machine took 1.9–2.2 s with two; see {@code docs/benchmarks.md}. libgomp's
 * {@code OMP_DYNAMIC} makes the same adjustment for OpenMP from the load average.
 *
 * <p>How: on Linux, the number of runnable threads on the machine ({@code /proc/loadavg}'s fourth field, an
 * instant count, not an average) minus this process's own runnable threads ({@code /proc/self/task/}{@code *}
 * {@code /stat}) is the number of cores others use now. A sample costs about a millisecond, so it is taken at
 * most every {@value #SAMPLE_INTERVAL_MS} ms, and the median of the last {@value #WINDOW} samples counts: one
 * sample can be off either way (the two files are read at slightly different instants while our JIT compilers or
 * a kernel thread come and go; on a quiet 2-core machine 5 of 80 samples saw another runnable thread), a process
 * that keeps a core busy is in every one. Elsewhere nothing is measured.
 *
 * <p>Off unless {@code -D}{@value #ENABLE_PROPERTY}{@code =true}: OpenBLAS's results can depend on its thread count
 * (a {@code ?gemm} with a transposed 256×784 operand differs in the last bits between 1 and 2 threads), and the
 * thread count applies to every OpenBLAS call of the process, the model's own products included. With it, the
 * same seed can train to different last bits from run to run (Fashion-MNIST MLP, seed 42: 88.91 % test accuracy
 * with the thread count fixed, every run; 88.96 % and 88.97 % in two runs with this on); without it, OpenBLAS
 * keeps libtorch's thread count, which the user chose.
 */
final class CpuContention {
    /** Set to {@code true} to let OpenBLAS give up the cores other processes keep busy. */
    static final String ENABLE_PROPERTY = "dev.muon.blas.adaptiveThreads";
    static final long SAMPLE_INTERVAL_MS = 200;
    static final int WINDOW = 5;

    private static final Path LOADAVG = Path.of("/proc/loadavg");
    private static final Path OWN_TASKS = Path.of("/proc/self/task");
    /** Whether this machine shows the counts (Linux). */
    static final boolean PROC_READABLE = Files.isReadable(LOADAVG) && Files.isDirectory(OWN_TASKS);
    static final boolean ENABLED = readEnabled() && PROC_READABLE;

    private static final int[] recent = new int[WINDOW];
    private static int samples;
    private static long lastSampleNanos;
    /** Tests turn sampling off to pin OpenBLAS's thread count to libtorch's. */
    static volatile boolean pausedForTests;

    private CpuContention() {
    }

    /**
     * Refuses a value of {@value #ENABLE_PROPERTY} other than true or false; {@link NewtonSchulz} calls it when it is
     * built, so that the refusal comes at an optimizer's build and never inside a step.
     *
     * @throws IllegalArgumentException naming the property and its value
     */
    static void checkSetting() {
        SystemSwitch.isOn(ENABLE_PROPERTY);
    }

    private static boolean readEnabled() {
        try {
            return SystemSwitch.isOn(ENABLE_PROPERTY);
        } catch (IllegalArgumentException e) {
            // Refused where an iteration is built (checkSetting); a class initializer must not throw.
            return false;
        }
    }

    /**
     * The threads OpenBLAS should run: {@code wanted}, less the cores other processes keep busy, at least one.
     *
     * @param wanted libtorch's intra-op thread count
     * @return the count to give OpenBLAS
     */
    static int threadsFor(int wanted) {
        // Called before every OpenBLAS iteration: off (the default), it costs no lock.
        if (!ENABLED || pausedForTests || wanted <= 1) {
            return wanted;
        }
        return sampledThreadsFor(wanted);
    }

    private static synchronized int sampledThreadsFor(int wanted) {
        long now = System.nanoTime();
        if (samples == 0 || now - lastSampleNanos >= SAMPLE_INTERVAL_MS * 1_000_000L) {
            lastSampleNanos = now;
            OptionalInt others = othersNow();
            if (others.isEmpty()) {
                return wanted;
            }
            recent[samples % WINDOW] = others.getAsInt();
            samples++;
        }
        int busy = median(Arrays.copyOf(recent, Math.min(samples, WINDOW)));
        return threadsLeft(wanted, Runtime.getRuntime().availableProcessors(), busy);
    }

    /**
     * The median of some counts (the upper one of the two middle ones for an even count).
     *
     * @param counts at least one count; reordered
     * @return the median
     */
    static int median(int[] counts) {
        Arrays.sort(counts);
        return counts[counts.length / 2];
    }

    /**
     * {@code wanted} threads on {@code cores} cores of which others keep {@code busyElsewhere} busy.
     *
     * @param wanted        the thread count asked for
     * @param cores         the cores this process may use
     * @param busyElsewhere the runnable threads of other processes
     * @return between 1 and {@code wanted}
     */
    static int threadsLeft(int wanted, int cores, int busyElsewhere) {
        return Math.max(1, Math.min(wanted, cores - Math.max(0, busyElsewhere)));
    }

    /**
     * The runnable threads of other processes in a {@code /proc/loadavg} line, given this process's own.
     *
     * @param loadavg   the line, e.g. {@code 0.45 1.39 2.12 3/78 12900}
     * @param ownRunning this process's runnable threads
     * @return the others', never negative
     * @throws IllegalArgumentException if the line has no {@code running/total} field
     */
    static int othersRunnable(String loadavg, int ownRunning) {
        String[] fields = loadavg.trim().split("\\s+");
        if (fields.length < 4 || fields[3].indexOf('/') < 1) {
            throw new IllegalArgumentException("loadavg line has no running/total field: '" + loadavg.trim() + "'");
        }
        int running = Integer.parseInt(fields[3].substring(0, fields[3].indexOf('/')));
        return Math.max(0, running - ownRunning);
    }

    /**
     * Whether a {@code /proc/[pid]/task/[tid]/stat} line is of a runnable thread (state {@code R}, the field after
     * the parenthesised name, which may itself hold spaces and parentheses).
     *
     * @param stat the line
     * @return true for state R
     */
    static boolean isRunnable(String stat) {
        int end = stat.lastIndexOf(')');
        return end >= 0 && end + 2 < stat.length() && stat.charAt(end + 2) == 'R';
    }

    static OptionalInt othersNow() {
        try {
            String loadavg = Files.readString(LOADAVG, StandardCharsets.US_ASCII);
            int own = 0;
            try (DirectoryStream<Path> tasks = Files.newDirectoryStream(OWN_TASKS)) {
                for (Path task : tasks) {
                    try {
                        if (isRunnable(Files.readString(task.resolve("stat"), StandardCharsets.US_ASCII))) {
                            own++;
                        }
                    } catch (IOException gone) {
                        // the thread ended between the listing and the read
                    }
                }
            }
            return OptionalInt.of(othersRunnable(loadavg, own));
        } catch (IOException | RuntimeException unreadable) {
            return OptionalInt.empty();
        }
    }
}
