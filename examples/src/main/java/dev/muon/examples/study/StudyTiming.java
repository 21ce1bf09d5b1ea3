package dev.muon.examples.study;

import dev.muon.examples.DataError;
import dev.muon.examples.MachineLoad;
import dev.muon.examples.SampleStats;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The study's timing pass: the training time per step of each configuration, measured on one machine in one
 * window with the configurations interleaved, so that a change of the machine's speed during the pass slows
 * them all alike. Seconds to the target are then {@code steps to the target × time per step} (evaluations
 * excluded), and the steps come from the sweep, where the machine's load does not matter.
 *
 * <p>Per setting: one model and optimizer per configuration (AdamW and {@code MuonAdamW} at the best lrs the
 * results hold, or the middle of the protocol's grids before they do, and the variants where the plan has them;
 * an lr does not change the work of a step), each given {@code warmUp} untimed steps; then {@code rounds}
 * rounds, in each of which every configuration trains {@code stepsPerRound} timed steps, the order rotated by one
 * each round. Every round of every configuration is one row of {@value #FILE}; a configuration's time per step
 * is the mean over its rounds, with the 95 % t-interval over rounds. The calling thread's CPU time per step is
 * recorded beside it ({@code cpu_ms_per_step}): with one libtorch thread, the step's work runs on that thread, and
 * its CPU time is what the step costs whatever else the machine runs, which is what a study's CPU-hours are
 * estimated from.
 */
final class StudyTiming {
    /** The timing file's name in a results folder. */
    static final String FILE = "timing.csv";
    static final List<String> HEADER = List.of("pass", "optimizer", "width", "batch", "layers", "heads", "context",
            "round", "position", "steps", "seconds", "ms_per_step", "cpu_ms_per_step", "threads", "load_start",
            "load_end", "cpu", "commit");

    private StudyTiming() {
    }

    /** One configuration's time per step in one setting: the ms of each round. */
    record StepTime(StudyArm arm, double[] msPerRound) {
        StudyStats.Interval interval() {
            return StudyStats.interval(msPerRound);
        }
    }

    /**
     * Runs the pass and appends its rows.
     *
     * @param data          the corpus
     * @param plan          the settings and where variants run
     * @param done          the sweep's finished runs, for the best lrs
     * @param rounds        rounds
     * @param stepsPerRound timed steps per configuration and round
     * @param warmUp        untimed steps per configuration first
     * @param csv           the timing file
     */
    static void run(MuonStudy.Data data, StudyPlan plan, Map<String, StudyResult> done, int rounds, int stepsPerRound,
                    int warmUp, Path csv) {
        String pass = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        StudyMachine machine = StudyMachine.here();
        System.out.printf(Locale.ROOT, "timing pass %s: %d rounds of %d steps per configuration after %d untimed; "
                + "libtorch threads %d; %s%n", pass, rounds, stepsPerRound, warmUp, torch.get_num_threads(),
                machine.cpu());
        for (StudySetting s : plan.settings()) {
            StudyPlan.Progress progress = plan.progress(s, done);
            double a = Double.isNaN(progress.bestAdamwLr()) ? plan.adamwLrs().get(plan.adamwLrs().size() / 2)
                    : progress.bestAdamwLr();
            double m = Double.isNaN(progress.bestMuonLr()) ? plan.muonLrs().get(plan.muonLrs().size() / 2)
                    : progress.bestMuonLr();
            List<StudyCell> configs = new ArrayList<>(List.of(s.cell(StudyArm.ADAMW, a, Double.NaN, 1),
                    s.cell(StudyArm.MUON, a, m, 1)));
            if (plan.variantsAt().contains(s)) {
                for (StudyArm arm : StudyArm.values()) {
                    if (arm.variant()) {
                        configs.add(s.cell(arm, a, m, 1));
                    }
                }
            }
            List<String> rows = new ArrayList<>();
            try (PointerScope scope = new PointerScope()) {
                List<StudyRun.Trainee> trainees = new ArrayList<>();
                for (StudyCell c : configs) {
                    StudyRun.Trainee t = StudyRun.start(data.corpus(), c);
                    for (int i = 0; i < warmUp; i++) {
                        t.step(data.corpus(), c);
                    }
                    trainees.add(t);
                }
                double[][] ms = new double[configs.size()][rounds];
                double[][] cpuMs = new double[configs.size()][rounds];
                java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
                for (int r = 0; r < rounds; r++) {
                    for (int i = 0; i < configs.size(); i++) {
                        int k = (r + i) % configs.size();
                        StudyCell c = configs.get(k);
                        double loadStart = MachineLoad.now().orElse(Double.NaN);
                        long cpu0 = threads.getCurrentThreadCpuTime();
                        long t0 = System.nanoTime();
                        for (int step = 0; step < stepsPerRound; step++) {
                            trainees.get(k).step(data.corpus(), c);
                        }
                        double seconds = (System.nanoTime() - t0) / 1e9;
                        ms[k][r] = 1000 * seconds / stepsPerRound;
                        cpuMs[k][r] = (threads.getCurrentThreadCpuTime() - cpu0) / 1e6 / stepsPerRound;
                        rows.add(String.join(",", pass, c.arm().id(), Integer.toString(s.width()),
                                Integer.toString(s.batch()), Integer.toString(s.layers()),
                                Integer.toString(s.heads()), Integer.toString(s.context()), Integer.toString(r + 1),
                                Integer.toString(i + 1), Integer.toString(stepsPerRound),
                                String.format(Locale.ROOT, "%.4f", seconds), String.format(Locale.ROOT, "%.3f",
                                        ms[k][r]), String.format(Locale.ROOT, "%.3f", cpuMs[k][r]),
                                Integer.toString(torch.get_num_threads()),
                                String.format(Locale.ROOT, "%.2f", loadStart),
                                String.format(Locale.ROOT, "%.2f", MachineLoad.now().orElse(Double.NaN)),
                                StudyMachine.clean(machine.cpu()), StudyMachine.clean(machine.commit())));
                    }
                }
                System.out.println(s.id() + " (" + s.title() + "):");
                for (int k = 0; k < configs.size(); k++) {
                    StudyStats.Interval iv = StudyStats.interval(ms[k]);
                    System.out.printf(Locale.ROOT, "  %-14s %8.2f ms/step  (95%% interval %s over %d rounds); "
                            + "this thread's CPU time %.2f ms/step%n", configs.get(k).arm().label(), iv.mean(),
                            Double.isNaN(iv.halfWidth()) ? "-" : String.format(Locale.ROOT, "%.2f to %.2f", iv.low(),
                                    iv.high()), rounds, SampleStats.mean(cpuMs[k]));
                }
            }
            append(csv, rows);
        }
        System.out.println("wrote " + csv.toAbsolutePath().normalize());
    }

    private static void append(Path csv, List<String> rows) {
        try {
            boolean fresh = !Files.exists(csv) || Files.size(csv) == 0;
            try (Writer w = Files.newBufferedWriter(csv, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND)) {
                if (fresh) {
                    w.write(String.join(",", HEADER) + "\n");
                }
                for (String row : rows) {
                    w.write(row + "\n");
                }
            }
        } catch (IOException e) {
            throw new DataError(csv + ": cannot append the timing rows (" + DataError.reason(e) + ")", e);
        }
    }

    /** One timed round of one configuration: its setting's key, its pass, wall and thread CPU ms per step, load. */
    record Round(String setting, String pass, StudyArm arm, double ms, double cpuMs, double loadStart,
                 double loadEnd) {
        /** How far the thread's CPU time per step is from the wall time, as a fraction of the wall time. */
        double cpuGap() {
            return Math.abs(ms - cpuMs) / ms;
        }
    }

    /**
     * What the rounds say of the machine during the pass: the load average's range (before and after every round;
     * NaN where unknown) and how close each round's thread CPU time came to its wall time.
     *
     * @param passes    the passes the rounds come from
     * @param rounds    the rounds
     * @param loadLow   the lowest load average read
     * @param loadHigh  the highest
     * @param maxCpuGap the largest {@link Round#cpuGap()}
     * @param tolerance the gap {@code within} counts against
     * @param within    the rounds whose gap is at most {@code tolerance}
     */
    record Quietness(List<String> passes, int rounds, double loadLow, double loadHigh, double maxCpuGap,
                     double tolerance, int within) {
    }

    /**
     * The time per step of each configuration of each setting, from the latest pass that timed that setting.
     *
     * @param csv the timing file
     * @return by setting ({@code WIDTHxBATCH/layers/heads/context}) and optimizer; empty if the file is missing
     * @throws DataError naming the file and line, if it is not a timing file
     */
    static Map<String, Map<StudyArm, StepTime>> read(Path csv) {
        return times(rounds(csv));
    }

    /**
     * The times per step of {@link #rounds}' rounds, by setting and optimizer, each in the rounds' order.
     *
     * @param rounds the rounds
     * @return by setting and optimizer
     */
    static Map<String, Map<StudyArm, StepTime>> times(List<Round> rounds) {
        Map<String, Map<StudyArm, List<Double>>> ms = new LinkedHashMap<>();
        for (Round r : rounds) {
            ms.computeIfAbsent(r.setting(), k -> new LinkedHashMap<>()).computeIfAbsent(r.arm(),
                    k -> new ArrayList<>()).add(r.ms());
        }
        Map<String, Map<StudyArm, StepTime>> out = new LinkedHashMap<>();
        ms.forEach((setting, arms) -> {
            Map<StudyArm, StepTime> times = new LinkedHashMap<>();
            arms.forEach((arm, values) -> times.put(arm, new StepTime(arm,
                    values.stream().mapToDouble(Double::doubleValue).toArray())));
            out.put(setting, times);
        });
        return out;
    }

    /**
     * The rounds of the latest pass that timed each setting, in the file's order.
     *
     * @param csv the timing file
     * @return the rounds; empty if the file is missing
     * @throws DataError naming the file and line, if it is not a timing file
     */
    static List<Round> rounds(Path csv) {
        if (!Files.exists(csv)) {
            return List.of();
        }
        List<String> lines = StudyCsv.readLines(csv);
        if (lines.isEmpty() || !Arrays.asList(lines.get(0).split(",", -1)).equals(HEADER)) {
            throw new DataError(csv + ": its header is not a timing file's (expected " + String.join(",", HEADER)
                    + ")");
        }
        Map<String, String> latest = new LinkedHashMap<>();
        List<Round> all = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            String[] f = lines.get(i).split(",", -1);
            if (f.length != HEADER.size()) {
                continue;
            }
            try {
                String setting = key(Integer.parseInt(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[4]),
                        Integer.parseInt(f[5]), Integer.parseInt(f[6]));
                String pass = f[0];
                latest.merge(setting, pass, (a, b) -> b.compareTo(a) > 0 ? b : a);
                all.add(new Round(setting, pass, StudyArm.of(f[1]), Double.parseDouble(f[11]),
                        Double.parseDouble(f[12]), Double.parseDouble(f[14]), Double.parseDouble(f[15])));
            } catch (IllegalArgumentException e) {
                throw new DataError(csv + " line " + (i + 1) + ": not a timing row (" + e.getMessage() + ")", e);
            }
        }
        return all.stream().filter(r -> r.pass().equals(latest.get(r.setting()))).toList();
    }

    /**
     * The machine's quietness during the rounds: the load average's range and the thread CPU time's distance from
     * the wall time.
     *
     * @param rounds    the rounds, at least one
     * @param tolerance the gap to count the rounds within, a fraction of the wall time (0.001 for 0.1 %)
     * @return the summary
     */
    static Quietness quietness(List<Round> rounds, double tolerance) {
        double low = Double.NaN;
        double high = Double.NaN;
        double gap = 0;
        int within = 0;
        List<String> passes = new ArrayList<>();
        for (Round r : rounds) {
            for (double load : new double[] {r.loadStart(), r.loadEnd()}) {
                if (Double.isFinite(load)) {
                    low = Double.isNaN(low) ? load : Math.min(low, load);
                    high = Double.isNaN(high) ? load : Math.max(high, load);
                }
            }
            gap = Math.max(gap, r.cpuGap());
            within += r.cpuGap() <= tolerance ? 1 : 0;
            if (!passes.contains(r.pass())) {
                passes.add(r.pass());
            }
        }
        return new Quietness(passes, rounds.size(), low, high, gap, tolerance, within);
    }

    /** The key of a setting in {@link #read}'s map. */
    static String key(int width, int batch, int layers, int heads, int context) {
        return width + "x" + batch + "/" + layers + "/" + heads + "/" + context;
    }

    /** The key of a setting in {@link #read}'s map. */
    static String key(StudySetting s) {
        return key(s.width(), s.batch(), s.layers(), s.heads(), s.context());
    }
}
