package dev.muon.examples.study;

import dev.muon.examples.DataError;
import dev.muon.examples.MachineLoad;
import org.bytedeco.javacpp.PointerScope;

import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The second study's timing pass (docs/examples.md, "The timing pass: one and two threads"): the tuned GCIDE
 * {@code B1} configuration of every arm, built side by side, {@link #WARM_UP} untimed steps each, then
 * {@link #ROUNDS} rounds; in each round every configuration trains {@link #STEPS_PER_ROUND} timed steps at one
 * libtorch and OpenBLAS thread and as many at two, the configurations' order rotated by one each round and the
 * thread counts' order alternated, so that a change of the machine's speed during the pass slows every arm alike.
 * Every block is a row of {@value #FILE}, with the load average before and after it and the calling thread's CPU
 * time (the whole step's at one thread). A time per step is the mean over the rounds; the schedule and the lr do
 * not change a step's work, so {@code B1}'s times serve every budget.
 */
final class SecondTiming {
    /** The timing file's name in the results folder. */
    static final String FILE = "timing.csv";
    static final List<String> HEADER = List.of("pass", "optimizer", "threads", "round", "position", "steps",
            "seconds", "ms_per_step", "cpu_ms_per_step", "load_start", "load_end", "cpu", "commit");
    /** The protocol's rounds, timed steps per block and untimed steps first. */
    static final int ROUNDS = 10;
    static final int STEPS_PER_ROUND = 20;
    static final int WARM_UP = 10;
    /** The thread counts timed, in the first round's order. */
    static final List<Integer> THREADS = List.of(1, 2);

    private SecondTiming() {
    }

    /** One timed block: a configuration at a thread count in one round. */
    record Round(String pass, SecondArm arm, int threads, int round, double ms, double cpuMs, double loadStart,
                 double loadEnd) {
    }

    /**
     * A variant's time per step over plain {@code MuonAdamW}'s at one thread count: the ratio of the means over
     * the rounds, with its 95 % interval by the delta method on the rounds' pairs (the same round's blocks ran
     * minutes apart at most, so their covariance is kept): {@code var(r) ≈ r²·(s²ₓ/x̄² + s²ᵧ/ȳ² − 2sₓᵧ/(x̄ȳ))/n},
     * the half-width {@code t(0.975, n − 1)·√var}.
     *
     * @param arm     the arm
     * @param threads the thread count
     * @param ms      its mean ms per step
     * @param ratio   over {@code MuonAdamW}'s
     * @param low     the interval's low end
     * @param high    its high end
     */
    record Cost(SecondArm arm, int threads, double ms, double ratio, double low, double high) {
    }

    /**
     * The configurations the pass times: every arm's tuned GCIDE {@code B1} configuration, in the arms' order.
     *
     * @param tuned the tuned configurations of GCIDE {@code B1} (seed 0)
     * @return the configurations, at seed 1
     * @throws DataError naming the arms not tuned yet
     */
    static List<SecondCell> configurations(Map<SecondArm, SecondCell> tuned) {
        List<SecondArm> missing = Arrays.stream(SecondArm.values()).filter(a -> !tuned.containsKey(a)).toList();
        if (!missing.isEmpty()) {
            throw new DataError("the timing pass times every arm's tuned " + SecondPlan.STAGES.get(0).id()
                    + " configuration; not tuned yet: " + missing.stream().map(SecondArm::id).toList());
        }
        return Arrays.stream(SecondArm.values()).map(a -> tuned.get(a).withSeed(1)).toList();
    }

    /**
     * Runs the pass and appends a row per block; leaves both thread pools at {@link SecondStudy#THREADS}.
     *
     * @param data          GCIDE's data
     * @param configs       the configurations
     * @param scale         the model's sizes
     * @param rounds        rounds
     * @param stepsPerRound timed steps per block
     * @param warmUp        untimed steps per configuration first
     * @param csv           the timing file
     * @param log           where to report
     */
    static void run(SecondData data, List<SecondCell> configs, SecondScale scale, int rounds, int stepsPerRound,
                    int warmUp, Path csv, PrintWriter log) {
        String pass = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        StudyMachine machine = StudyMachine.here();
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        log.printf(Locale.ROOT, "timing pass %s: %d configurations, %d rounds of %d steps at %s threads after %d "
                + "untimed; %s%n", pass, configs.size(), rounds, stepsPerRound, THREADS, warmUp, machine.cpu());
        List<SecondRun.Trainee> trainees = new ArrayList<>();
        long[] done = new long[configs.size()];
        try (PointerScope scope = new PointerScope()) {
            for (SecondCell c : configs) {
                trainees.add(SecondRun.start(data.corpus(), c, scale));
            }
            MuonStudy.useThreads(SecondStudy.THREADS);
            for (int k = 0; k < configs.size(); k++) {
                for (int i = 0; i < warmUp; i++) {
                    step(trainees.get(k), data, scale, configs.get(k), done, k);
                }
            }
            for (int r = 0; r < rounds; r++) {
                List<Integer> order = new ArrayList<>(THREADS);
                if (r % 2 == 1) {
                    java.util.Collections.reverse(order);
                }
                for (int threads : order) {
                    MuonStudy.useThreads(threads);
                    for (int i = 0; i < configs.size(); i++) {
                        int k = (r + i) % configs.size();
                        double loadStart = MachineLoad.now().orElse(Double.NaN);
                        long cpu0 = cpu.getCurrentThreadCpuTime();
                        long t0 = System.nanoTime();
                        for (int s = 0; s < stepsPerRound; s++) {
                            step(trainees.get(k), data, scale, configs.get(k), done, k);
                        }
                        double seconds = (System.nanoTime() - t0) / 1e9;
                        double cpuMs = (cpu.getCurrentThreadCpuTime() - cpu0) / 1e6 / stepsPerRound;
                        ResultsFile.append(csv, HEADER, String.join(",", pass, configs.get(k).arm().id(),
                                Integer.toString(threads), Integer.toString(r + 1), Integer.toString(i + 1),
                                Integer.toString(stepsPerRound), String.format(Locale.ROOT, "%.4f", seconds),
                                String.format(Locale.ROOT, "%.3f", 1000 * seconds / stepsPerRound),
                                String.format(Locale.ROOT, "%.3f", cpuMs), String.format(Locale.ROOT, "%.2f",
                                        loadStart), String.format(Locale.ROOT, "%.2f",
                                        MachineLoad.now().orElse(Double.NaN)), StudyMachine.clean(machine.cpu()),
                                StudyMachine.clean(machine.commit())));
                    }
                }
                log.printf(Locale.ROOT, "round %d of %d%n", r + 1, rounds);
                log.flush();
            }
        } finally {
            MuonStudy.useThreads(SecondStudy.THREADS);
            trainees.forEach(SecondRun.Trainee::close);
        }
        log.println("wrote " + csv.toAbsolutePath().normalize());
    }

    /** One step of configuration k; the schedule's step wraps at the run's length, which only sets the lr. */
    private static void step(SecondRun.Trainee t, SecondData data, SecondScale scale, SecondCell c, long[] done,
                             int k) {
        done[k] = done[k] % scale.steps(c) + 1;
        t.step(data.corpus(), done[k]);
    }

    /**
     * The rounds of the file's latest pass.
     *
     * @param csv the timing file
     * @return the rounds, in the file's order; empty if the file does not exist
     * @throws DataError naming the file, if it cannot be read or its header is not this timing file's
     */
    static List<Round> read(Path csv) {
        List<Round> all = ResultsFile.read(csv, HEADER, "a second-study timing file's", SecondTiming::parse).rows();
        String latest = all.stream().map(Round::pass).max(String::compareTo).orElse(null);
        return all.stream().filter(r -> r.pass().equals(latest)).toList();
    }

    /** A row read back. */
    static Round parse(String line) {
        String[] f = line.split(",", -1);
        if (f.length != HEADER.size()) {
            throw new IllegalArgumentException("has " + f.length + " columns, expected " + HEADER.size());
        }
        try {
            Instant.parse(f[0]);
        } catch (java.time.format.DateTimeParseException e) {
            throw new IllegalArgumentException("pass must be an ISO-8601 instant, got '" + f[0] + "'", e);
        }
        return new Round(f[0], SecondArm.of(f[1]), Integer.parseInt(f[2]), Integer.parseInt(f[3]),
                Double.parseDouble(f[7]), Double.parseDouble(f[8]), Double.parseDouble(f[9]),
                Double.parseDouble(f[10]));
    }

    /** The blocks a whole pass has: every arm at every thread count in every round. */
    static int blocks() {
        return SecondArm.values().length * THREADS.size() * ROUNDS;
    }

    /**
     * How many of a pass's blocks are there with a finite time, each block counted once.
     *
     * @param rounds the rounds of one pass
     * @return the blocks, {@link #blocks()} for a whole pass
     */
    static int finished(List<Round> rounds) {
        return (int) rounds.stream().filter(r -> Double.isFinite(r.ms()) && r.round() >= 1 && r.round() <= ROUNDS
                && THREADS.contains(r.threads())).map(r -> r.arm() + " " + r.threads() + " " + r.round())
                .distinct().count();
    }

    /**
     * Each arm's ms per step at each thread count, one value per round in round order.
     *
     * @param rounds the rounds of one pass
     * @return by thread count, then arm
     */
    static Map<Integer, Map<SecondArm, double[]>> times(List<Round> rounds) {
        Map<Integer, Map<SecondArm, double[]>> out = new TreeMap<>();
        int n = rounds.stream().mapToInt(Round::round).max().orElse(0);
        for (Round r : rounds) {
            out.computeIfAbsent(r.threads(), t -> new EnumMap<>(SecondArm.class))
                    .computeIfAbsent(r.arm(), a -> filled(n))[r.round() - 1] = r.ms();
        }
        return out;
    }

    private static double[] filled(int n) {
        double[] out = new double[n];
        Arrays.fill(out, Double.NaN);
        return out;
    }

    /**
     * Every arm's step cost against {@code MuonAdamW}'s at one thread count.
     *
     * @param times   the arms' ms per round at that thread count, {@code MuonAdamW}'s among them
     * @param threads the thread count, for the rows
     * @return the costs, in the arms' order
     */
    static List<Cost> costs(Map<SecondArm, double[]> times, int threads) {
        double[] muon = times.get(SecondArm.MUON);
        List<Cost> out = new ArrayList<>();
        times.forEach((arm, ms) -> out.add(cost(arm, threads, ms, muon)));
        return out;
    }

    /** The ratio of means of paired rounds with its delta-method 95 % interval. */
    static Cost cost(SecondArm arm, int threads, double[] x, double[] y) {
        int n = x.length;
        double mx = Arrays.stream(x).average().orElseThrow();
        double my = Arrays.stream(y).average().orElseThrow();
        double sxx = 0;
        double syy = 0;
        double sxy = 0;
        for (int i = 0; i < n; i++) {
            sxx += (x[i] - mx) * (x[i] - mx);
            syy += (y[i] - my) * (y[i] - my);
            sxy += (x[i] - mx) * (y[i] - my);
        }
        double ratio = mx / my;
        double relative = (sxx / (mx * mx) + syy / (my * my) - 2 * sxy / (mx * my)) / (n - 1);
        double half = StudyStats.tQuantile(1 - StudyStats.ALPHA / 2, n - 1) * ratio
                * Math.sqrt(Math.max(0, relative) / n);
        return new Cost(arm, threads, mx, ratio, ratio - half, ratio + half);
    }
}
