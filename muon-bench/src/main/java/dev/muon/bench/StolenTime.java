package dev.muon.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * What the kernel says a measured step lost to others, read before and after it: the <em>steal</em> time of the
 * machine's CPUs ({@code /proc/stat}'s eighth column, in clock ticks of {@link #TICK_MS} ms, summed over every
 * CPU: time a virtual CPU was ready to run and its host ran something else), and the <em>run-queue wait</em> of
 * this process's threads ({@code /proc/self/task/<tid>/schedstat}'s second field, nanoseconds: time a thread was
 * runnable and waited for a CPU inside this machine). Neither is code of ours: a slow step that lines up with
 * steal was slowed by the host; one that lines up with run-queue wait, by other work on this machine (or our own
 * threads outnumbering the cores). Beside them, this process's <em>minor page faults</em> ({@code /proc/self/stat}'s
 * tenth field): pages touched for the first time, which a step that reuses its memory does not take. Linux only;
 * elsewhere all three read NaN.
 *
 * @param stealMs          the CPUs' steal time so far, ms
 * @param runQueueWaitMs   this process's threads' run-queue wait so far, ms (threads that ended are not counted)
 * @param minorFaults      this process's minor page faults so far
 */
public record StolenTime(double stealMs, double runQueueWaitMs, double minorFaults) {
    /** Linux's {@code USER_HZ} is 100 on every architecture it reports {@code /proc/stat} for. */
    static final double TICK_MS = 10;
    private static final Path STAT = Path.of("/proc/stat");
    private static final Path TASKS = Path.of("/proc/self/task");
    private static final Path SELF = Path.of("/proc/self/stat");

    /**
     * The counters now.
     *
     * @return both counters; NaN where this system has no {@code /proc}
     */
    public static StolenTime now() {
        if (!Files.isReadable(STAT)) {
            return new StolenTime(Double.NaN, Double.NaN, Double.NaN);
        }
        try {
            double steal = steal(Files.readAllLines(STAT).get(0));
            double waitNs = 0;
            try (Stream<Path> tasks = Files.list(TASKS)) {
                for (Path task : (Iterable<Path>) tasks::iterator) {
                    try {
                        waitNs += runQueueWaitNs(Files.readString(task.resolve("schedstat")));
                    } catch (IOException ended) {
                        // A thread that ended between the listing and the read: its wait is gone with it.
                    }
                }
            }
            return new StolenTime(steal, waitNs / 1e6, minorFaults(Files.readString(SELF)));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the kernel's CPU counters", e);
        }
    }

    /**
     * What this step lost: the counters' growth since {@code before}.
     *
     * @param before the counters before the step
     * @return the differences
     */
    public StolenTime since(StolenTime before) {
        return new StolenTime(stealMs - before.stealMs, runQueueWaitMs - before.runQueueWaitMs,
                minorFaults - before.minorFaults);
    }

    /**
     * The steal time of {@code /proc/stat}'s first line ({@code cpu  user nice system idle iowait irq softirq
     * steal ...}), ms.
     *
     * @param line the line
     * @return the steal time, ms
     * @throws IllegalArgumentException if the line is not the all-CPU line or has no steal column
     */
    static double steal(String line) {
        String[] f = line.trim().split("\\s+");
        if (!f[0].equals("cpu") || f.length < 9) {
            throw new IllegalArgumentException("/proc/stat's first line must be 'cpu' and at least 8 counters, got '"
                    + line + "'");
        }
        return Long.parseLong(f[8]) * TICK_MS;
    }

    /**
     * The run-queue wait of a {@code schedstat} line ({@code run_ns wait_ns timeslices}), ns.
     *
     * @param line the line
     * @return the wait, ns
     * @throws IllegalArgumentException if the line does not hold three counters
     */
    static double runQueueWaitNs(String line) {
        String[] f = line.trim().split("\\s+");
        if (f.length != 3) {
            throw new IllegalArgumentException("schedstat must hold 3 counters, got '" + line.trim() + "'");
        }
        return Long.parseLong(f[1]);
    }

    /**
     * The minor faults of a {@code /proc/PID/stat} line: the tenth field, counted after the command name's closing
     * parenthesis (the name may hold spaces and parentheses).
     *
     * @param line the line
     * @return the count
     * @throws IllegalArgumentException if the line has no command name or too few fields after it
     */
    static double minorFaults(String line) {
        int close = line.lastIndexOf(')');
        String[] f = close < 0 ? new String[0] : line.substring(close + 1).trim().split("\\s+");
        if (f.length < 8) {
            throw new IllegalArgumentException("a stat line must hold '(name)' and at least 8 fields after it, got '"
                    + line.trim() + "'");
        }
        // After ')': state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) flags(9) minflt(10).
        return Long.parseLong(f[7]);
    }
}
