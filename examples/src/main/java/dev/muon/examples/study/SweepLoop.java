package dev.muon.examples.study;

import dev.muon.examples.AssignmentLog;
import dev.muon.examples.DataError;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The loop both studies' resumable sweeps run ({@link MuonStudy}'s {@code sweep}, {@link SecondStudy}), and the
 * lock that keeps two sweeps off one results folder.
 *
 * <p>The loop asks the plan for the cells it needs next each time a worker is free, rather than listing them once:
 * a finished run can change what the plan needs (a best lr at a grid's edge grows the grid). It runs up to
 * {@code workers} runs at once on daemon threads, starts no more than {@code maxRuns} (0: no limit), and after a
 * run fails starts no other, lets those running end, then throws the failure.
 *
 * @param threadName the workers' thread name
 * @param workers    runs at once
 * @param maxRuns    runs to start at the most; 0: no limit
 * @param <C>        a cell of the plan
 * @param <R>        a finished run
 */
record SweepLoop<C extends SeededCell<C>, R>(String threadName, int workers, int maxRuns) {

    /**
     * What a sweep does with a finished run: keeps it where the plan will see it, and says so.
     *
     * @param <C> a cell of the plan
     * @param <R> a finished run
     */
    interface Finish<C, R> {
        /**
         * Takes a finished run.
         *
         * @param count  the runs this loop has finished, this one included
         * @param cell   its cell
         * @param result the run
         */
        void accept(int count, C cell, R result);
    }

    /**
     * Runs the cells the plan asks for until none is running and none is left to start: the plan asks for no other,
     * {@code maxRuns} have started, or a run failed.
     *
     * @param pending the cells the plan needs now, in the order to run them (asked again after each start and end)
     * @param train   trains a cell and writes its row, on a worker thread
     * @param finish  takes each finished run, on the calling thread
     * @return the runs started
     * @throws RuntimeException the first failed run's exception ({@link IllegalStateException} around a checked
     *                          one, or around an interruption of the calling thread)
     */
    int run(Supplier<List<C>> pending, Function<C, R> train, Finish<C, R> finish) {
        ExecutorService pool = Executors.newFixedThreadPool(workers, r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
        ExecutorCompletionService<R> completion = new ExecutorCompletionService<>(pool);
        Set<String> running = new LinkedHashSet<>();
        Map<Future<R>, C> futures = new HashMap<>();
        int started = 0;
        int finished = 0;
        Exception failure = null;
        try {
            while (true) {
                List<C> next = failure != null || (maxRuns > 0 && started >= maxRuns) ? List.of()
                        : pending.get().stream().filter(c -> !running.contains(c.key())).toList();
                if (!next.isEmpty() && running.size() < workers) {
                    C cell = next.get(0);
                    running.add(cell.key());
                    started++;
                    futures.put(completion.submit(() -> train.apply(cell)), cell);
                    continue;
                }
                if (running.isEmpty()) {
                    break;
                }
                Future<R> f = completion.take();
                C cell = futures.remove(f);
                running.remove(cell.key());
                try {
                    R r = f.get();
                    finished++;
                    finish.accept(finished, cell, r);
                } catch (ExecutionException e) {
                    failure = e.getCause() instanceof Exception ex ? ex : e;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("the sweep was interrupted", e);
        } finally {
            pool.shutdownNow();
        }
        if (failure instanceof RuntimeException re) {
            throw re;
        } else if (failure != null) {
            throw new IllegalStateException(failure);
        }
        return started;
    }

    /**
     * The line a sweep prints when a run ends.
     *
     * @param count the runs the sweep has finished, this one included
     * @param cell  its cell
     * @param r     the run
     * @return the line, without a line break
     */
    static String doneLine(int count, Object cell, FinishedRun r) {
        return String.format(Locale.ROOT, "done %d: %s: final val %.4f%s, %.1f ms/step, %.0f s", count, cell,
                r.finalValLoss(), r.diverged() ? " (diverged)" : "", r.msPerStep(), r.wallSeconds());
    }

    /**
     * Runs a sweep holding the results folder's {@code sweep.lock}, with the assignment log quiet.
     *
     * @param folder the results folder, which exists
     * @param option the option that names it, for the message
     * @param sweep  the sweep
     * @return what the sweep returns
     * @throws DataError if another sweep holds the lock
     * @throws IOException if the lock file cannot be opened
     */
    static Integer locked(Path folder, String option, Supplier<Integer> sweep) throws IOException {
        try (FileChannel lockFile = FileChannel.open(folder.resolve("sweep.lock"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE); FileLock lock = lockFile.tryLock()) {
            if (lock == null) {
                throw new DataError(option + " " + folder + ": another sweep is running on this folder (it holds "
                        + folder.resolve("sweep.lock") + ")");
            }
            return AssignmentLog.quietly(sweep);
        }
    }
}
