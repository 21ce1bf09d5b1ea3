package dev.muon.examples.study;

import dev.muon.examples.DataError;
import dev.muon.examples.SampleStats;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The study's analysis, as the protocol in docs/examples.md defines it, per setting: the lr sweeps, the target
 * (AdamW's best mean final validation loss), and for AdamW, {@code MuonAdamW} and each variant at the best lrs the
 * steps and seconds to the target with their 95 % t-intervals over seeds and Welch's verdict against AdamW, and the
 * final validation loss with its verdict.
 *
 * <p>Steps to the target: the first step at which a run's validation loss is at or below the target, interpolated
 * linearly between the two evaluations around it; a run that never gets there (or diverged) is censored and counts
 * as the run's length, a lower bound of its true steps, so a censored optimizer is credited with fewer steps than it
 * needs: a verdict against it stands, and the table says how many runs were censored. Seconds to the target: each
 * run's steps times its configuration's mean time per step from the timing pass ({@link StudyTiming}); without a
 * timing pass, no seconds are given; with one, the seconds get Welch's test as the steps do, and the report adds the
 * time per step's 95 % interval over the pass's rounds and the pass's load average and thread CPU time.
 *
 * <p>Beyond the protocol, each variant is compared with {@code MuonAdamW} paired by seed (the seeds share initial
 * weights and batches), steps to the target and final loss, by the paired t-test: reported, not a verdict.
 */
final class StudyAnalysis {
    /** The summary table's file name. */
    static final String SUMMARY = "steps-to-target.csv";
    /** The report's file name. */
    static final String REPORT = "analysis.md";
    /** The thread CPU time's distance from the wall time that the report counts the timed rounds within: 0.1 %. */
    static final double CPU_GAP = 0.001;

    private StudyAnalysis() {
    }

    /** One configuration's runs: an optimizer at its lrs, over seeds. */
    record Config(StudyArm arm, double adamwLr, double muonLr, List<StudyResult> runs) {
        double[] finals() {
            return runs.stream().mapToDouble(StudyResult::finalValLoss).toArray();
        }

        /** The mean final loss, NaN if a run diverged. */
        double meanFinal() {
            return SampleStats.mean(finals());
        }

        long diverged() {
            return runs.stream().filter(StudyResult::diverged).count();
        }

        String label() {
            return arm == StudyArm.HYPERBALL ? arm.label() + " (Muon lr " + StudyCell.lr(muonLr) + ")" : arm.label();
        }
    }

    /** One compared configuration's numbers. */
    record Row(Config config, double[] steps, int censored, StudyStats.Interval stepsInterval,
               StudyStats.Welch stepsTest, StudyStats.Verdict stepsVerdict, StudyTiming.StepTime time,
               double[] seconds, StudyStats.Interval secondsInterval, StudyStats.Welch secondsTest,
               StudyStats.Verdict secondsVerdict, StudyStats.Interval finalInterval, StudyStats.Welch finalTest,
               StudyStats.Verdict finalVerdict) {
        /** Whether no run reached the target: its steps are all the run length, and a test of them says nothing. */
        boolean neverReached() {
            return censored == steps.length;
        }

        /** The steps verdict as the report writes it: not reached when every run is censored. */
        String stepsVerdictText() {
            if (stepsVerdict == null) {
                return "baseline";
            }
            return neverReached() ? "not reached, " + censored + " of " + steps.length + " censored"
                    : stepsVerdict.toString();
        }
    }

    /**
     * A variant against {@code MuonAdamW} paired by seed, on the seeds both ran: the steps to the target and the
     * final validation loss, each variant less {@code MuonAdamW}.
     *
     * @param config   the variant
     * @param seeds    the seeds both ran
     * @param censored the pairs in which either run is censored
     * @param steps    the paired test of the steps, null with fewer than two pairs
     * @param finals   the paired test of the final losses, null with fewer than two pairs or a diverged run
     */
    record PairedRow(Config config, int seeds, int censored, StudyStats.Paired steps, StudyStats.Paired finals) {
    }

    /** A setting's analysis. */
    record SettingAnalysis(StudySetting setting, Map<Double, Config> adamwSweep, double bestAdamwLr,
                           Map<Double, Config> muonSweep, double bestMuonLr, double target, List<Row> rows,
                           List<PairedRow> paired) {
    }

    /**
     * Reads the results, writes the report, the summary CSV and the figures, and prints the report.
     *
     * @param results the results folder
     * @param out     where to write
     */
    static void run(Path results, Path out) {
        StudyCsv.Contents contents = StudyCsv.read(results.resolve(StudyCsv.FILE));
        List<StudyTiming.Round> rounds = StudyTiming.rounds(results.resolve(StudyTiming.FILE));
        Map<String, Map<StudyArm, StudyTiming.StepTime>> times = StudyTiming.times(rounds);
        List<SettingAnalysis> analyses = analyze(new ArrayList<>(contents.byKey().values()), times);
        String report = markdown(analyses, !times.isEmpty(),
                rounds.isEmpty() ? null : StudyTiming.quietness(rounds, CPU_GAP));
        List<Path> written = new ArrayList<>();
        try {
            Files.writeString(out.resolve(REPORT), report, StandardCharsets.UTF_8);
            written.add(out.resolve(REPORT));
            Files.writeString(out.resolve(SUMMARY), summaryCsv(analyses), StandardCharsets.UTF_8);
            written.add(out.resolve(SUMMARY));
        } catch (IOException e) {
            throw new DataError(out + ": cannot write the report (" + DataError.reason(e) + ")", e);
        }
        for (SettingAnalysis a : analyses) {
            written.addAll(StudyFigures.write(a, times.get(StudyTiming.key(a.setting())), out));
        }
        System.out.print(report);
        written.forEach(p -> System.out.println("wrote " + p));
    }

    /**
     * The analysis of every setting that has AdamW runs.
     *
     * @param results the finished runs
     * @param times   the timing pass's times per step, by setting key
     * @return one analysis per setting, in the order the settings first appear
     */
    static List<SettingAnalysis> analyze(List<StudyResult> results, Map<String, Map<StudyArm,
            StudyTiming.StepTime>> times) {
        Map<StudySetting, List<StudyResult>> bySetting = new LinkedHashMap<>();
        for (StudyResult r : results) {
            bySetting.computeIfAbsent(r.cell().setting(), k -> new ArrayList<>()).add(r);
        }
        List<SettingAnalysis> out = new ArrayList<>();
        bySetting.forEach((s, runs) -> {
            SettingAnalysis a = analyze(s, runs, times.getOrDefault(StudyTiming.key(s), Map.of()));
            if (a != null) {
                out.add(a);
            }
        });
        return out;
    }

    /** One setting; null if it has no AdamW runs. */
    static SettingAnalysis analyze(StudySetting s, List<StudyResult> runs, Map<StudyArm, StudyTiming.StepTime> times) {
        Map<Double, Config> adamw = sweep(runs, StudyArm.ADAMW, Double.NaN);
        if (adamw.isEmpty()) {
            return null;
        }
        double a = best(adamw);
        Map<Double, Config> muon = sweep(runs, StudyArm.MUON, a);
        double m = muon.isEmpty() ? Double.NaN : best(muon);
        Config baseline = adamw.get(a);
        double target = baseline.meanFinal();
        List<Config> compared = new ArrayList<>(List.of(baseline));
        if (!muon.isEmpty()) {
            compared.add(muon.get(m));
            for (StudyCell v : StudyPlan.variantCells(s, a, m)) {
                List<StudyResult> vr = runs.stream().filter(r -> same(r.cell(), v)).toList();
                if (!vr.isEmpty()) {
                    compared.add(new Config(v.arm(), a, v.muonLr(), vr));
                }
            }
        }
        List<Row> rows = new ArrayList<>();
        Row base = null;
        for (Config c : compared) {
            Row row = row(c, base, target, s.steps(), times.get(c.arm()));
            base = base == null ? row : base;
            rows.add(row);
        }
        List<PairedRow> paired = new ArrayList<>();
        for (Row r : rows.subList(Math.min(2, rows.size()), rows.size())) {
            paired.add(paired(r, rows.get(1), target));
        }
        return new SettingAnalysis(s, adamw, a, muon, m, target, rows, paired);
    }

    /**
     * A variant's row against {@code MuonAdamW}'s, paired by seed.
     *
     * @param variant the variant's row
     * @param muon    {@code MuonAdamW}'s row
     * @param target  the target loss, to tell the censored runs
     * @return the comparison on the seeds both ran
     */
    static PairedRow paired(Row variant, Row muon, double target) {
        Map<Long, Integer> muonIndex = new TreeMap<>();
        for (int i = 0; i < muon.config().runs().size(); i++) {
            muonIndex.put(muon.config().runs().get(i).cell().seed(), i);
        }
        List<double[]> steps = new ArrayList<>();
        List<double[]> finals = new ArrayList<>();
        int censored = 0;
        for (int i = 0; i < variant.config().runs().size(); i++) {
            StudyResult v = variant.config().runs().get(i);
            Integer j = muonIndex.get(v.cell().seed());
            if (j == null) {
                continue;
            }
            steps.add(new double[] {variant.steps()[i], muon.steps()[j]});
            finals.add(new double[] {v.finalValLoss(), muon.config().runs().get(j).finalValLoss()});
            censored += Double.isNaN(v.stepsTo(target)) || Double.isNaN(
                    muon.config().runs().get(j).stepsTo(target)) ? 1 : 0;
        }
        StudyStats.Paired stepsTest = steps.size() < 2 ? null : StudyStats.paired(
                steps.stream().mapToDouble(x -> x[0]).toArray(), steps.stream().mapToDouble(x -> x[1]).toArray());
        boolean finite = finals.stream().allMatch(x -> Double.isFinite(x[0]) && Double.isFinite(x[1]));
        StudyStats.Paired finalsTest = finals.size() < 2 || !finite ? null : StudyStats.paired(
                finals.stream().mapToDouble(x -> x[0]).toArray(), finals.stream().mapToDouble(x -> x[1]).toArray());
        return new PairedRow(variant.config(), steps.size(), censored, stepsTest, finalsTest);
    }

    /** Whether a run is of a configuration (any seed). */
    private static boolean same(StudyCell run, StudyCell config) {
        return run.withSeed(0).key().equals(config.withSeed(0).key());
    }

    /** An optimizer's configurations by lr (the Muon lr for Muon, at AdamW lr {@code adamwLr}). */
    private static Map<Double, Config> sweep(List<StudyResult> runs, StudyArm arm, double adamwLr) {
        Map<Double, List<StudyResult>> byLr = new TreeMap<>();
        for (StudyResult r : runs) {
            StudyCell c = r.cell();
            if (c.arm() == arm && (arm == StudyArm.ADAMW || c.adamwLr() == adamwLr)) {
                byLr.computeIfAbsent(arm == StudyArm.ADAMW ? c.adamwLr() : c.muonLr(), k -> new ArrayList<>()).add(r);
            }
        }
        Map<Double, Config> out = new TreeMap<>();
        byLr.forEach((lr, list) -> out.put(lr, new Config(arm, arm == StudyArm.ADAMW ? lr : adamwLr,
                arm == StudyArm.ADAMW ? Double.NaN : lr, list)));
        return out;
    }

    private static double best(Map<Double, Config> sweep) {
        Map<Double, double[]> finals = new TreeMap<>();
        sweep.forEach((lr, c) -> finals.put(lr, c.finals()));
        return StudyPlan.best(finals);
    }

    /**
     * One configuration's steps and seconds to the target and its final loss, tested against the baseline's.
     *
     * @param c        the configuration
     * @param baseline the baseline's row, or null for the baseline itself
     * @param target   the target loss
     * @param length   the run length, what a censored run counts as
     * @param time     the configuration's time per step, or null
     * @return the row
     */
    static Row row(Config c, Row baseline, double target, int length, StudyTiming.StepTime time) {
        double[] steps = new double[c.runs().size()];
        int censored = 0;
        for (int i = 0; i < steps.length; i++) {
            double s = c.runs().get(i).stepsTo(target);
            if (Double.isNaN(s)) {
                censored++;
                s = length;
            }
            steps[i] = s;
        }
        double[] seconds = null;
        StudyStats.Interval secondsInterval = null;
        if (time != null) {
            double perStep = time.interval().mean() / 1000;
            seconds = java.util.Arrays.stream(steps).map(x -> x * perStep).toArray();
            secondsInterval = StudyStats.interval(seconds);
        }
        double[] finals = c.finals();
        StudyStats.Welch stepsTest = null;
        StudyStats.Welch finalTest = null;
        StudyStats.Verdict stepsVerdict = null;
        StudyStats.Welch secondsTest = null;
        StudyStats.Verdict secondsVerdict = null;
        StudyStats.Verdict finalVerdict = null;
        if (baseline != null) {
            if (steps.length >= 2 && baseline.steps().length >= 2) {
                stepsTest = StudyStats.welch(steps, baseline.steps());
                if (StudyStats.allFinite(finals) && StudyStats.allFinite(baseline.config().finals())) {
                    finalTest = StudyStats.welch(finals, baseline.config().finals());
                }
            }
            stepsVerdict = StudyStats.verdict(steps, baseline.steps());
            secondsVerdict = seconds != null && baseline.seconds() != null
                    ? StudyStats.verdict(seconds, baseline.seconds()) : null;
            if (seconds != null && baseline.seconds() != null && seconds.length >= 2
                    && baseline.seconds().length >= 2) {
                secondsTest = StudyStats.welch(seconds, baseline.seconds());
            }
            finalVerdict = StudyStats.allFinite(finals) && StudyStats.allFinite(baseline.config().finals())
                    ? StudyStats.verdict(finals, baseline.config().finals()) : StudyStats.Verdict.NO_DIFFERENCE;
        }
        return new Row(c, steps, censored, StudyStats.interval(steps), stepsTest, stepsVerdict, time, seconds,
                secondsInterval, secondsTest, secondsVerdict, StudyStats.interval(finals), finalTest, finalVerdict);
    }

    /**
     * The report: per setting, the two sweeps, the target, the steps-and-seconds table and the final losses; then
     * rule 10's batch-size reading ({@link StudyBatchSize}) where a model ran at two batch sizes.
     */
    static String markdown(List<SettingAnalysis> analyses, boolean timed) {
        return markdown(analyses, timed, null);
    }

    /**
     * The report, with the timing pass's quietness at the end.
     *
     * @param analyses the settings' analyses
     * @param timed    whether there was a timing pass
     * @param quiet    the timing pass's load and CPU time, or null
     * @return the markdown
     */
    static String markdown(List<SettingAnalysis> analyses, boolean timed, StudyTiming.Quietness quiet) {
        StringBuilder md = new StringBuilder("# MuonStudy: results\n\n");
        md.append("Means over seeds with their 95 % t-intervals; the verdicts are the protocol's rule (Welch's t, "
                + "two-sided, p < 0.05) against AdamW at its best lr. A run that never reaches the target is "
                + "censored and counts as its length.");
        if (!timed) {
            md.append(" No timing pass in the results: no seconds.");
        }
        md.append("\n");
        for (SettingAnalysis a : analyses) {
            StudySetting s = a.setting();
            md.append("\n## ").append(s.title()).append("\n\n");
            md.append("AdamW lr sweep (final validation loss, nats per character):\n\n");
            sweepTable(md, "lr", a.adamwSweep(), a.bestAdamwLr());
            if (!a.muonSweep().isEmpty()) {
                md.append("\nMuonAdamW Muon lr sweep, its AdamW side at ").append(StudyCell.lr(a.bestAdamwLr()))
                        .append(":\n\n");
                sweepTable(md, "Muon lr", a.muonSweep(), a.bestMuonLr());
            }
            md.append(String.format(Locale.ROOT, "%nTarget: %.4f, AdamW's mean final validation loss at lr %s.%n%n",
                    a.target(), StudyCell.lr(a.bestAdamwLr())));
            md.append("| optimizer | lr | Muon lr | seeds | steps to target | 95 % interval | censored | Welch p "
                    + "| verdict | ms/step | seconds to target | 95 % interval | verdict |\n");
            md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |\n");
            for (Row r : a.rows()) {
                Config c = r.config();
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %d | %.0f | %s | %d | %s | %s | %s | %s | %s "
                                + "| %s |%n", c.label(), StudyCell.lr(c.adamwLr()),
                        c.arm().muon() ? StudyCell.lr(c.muonLr()) : "-", c.runs().size(), r.stepsInterval().mean(),
                        range(r.stepsInterval(), "%.0f"), r.censored(), p(r.stepsTest()), r.stepsVerdictText(),
                        r.time() == null ? "-" : String.format(Locale.ROOT, "%.1f", r.time().interval().mean()),
                        r.secondsInterval() == null ? "-" : String.format(Locale.ROOT, "%.1f",
                                r.secondsInterval().mean()),
                        r.secondsInterval() == null ? "-" : range(r.secondsInterval(), "%.1f"),
                        r.stepsVerdict() == null ? "baseline" : r.secondsVerdict() == null ? "-" : r.secondsVerdict()));
            }
            secondsTable(md, a);
            censoring(md, a);
            md.append("\nFinal validation loss at the best lrs (lower is better):\n\n");
            md.append("| optimizer | final val loss | 95 % interval | diverged | Welch p | verdict |\n");
            md.append("| --- | ---: | ---: | ---: | ---: | --- |\n");
            for (Row r : a.rows()) {
                md.append(String.format(Locale.ROOT, "| %s | %.4f | %s | %d | %s | %s |%n", r.config().label(),
                        r.finalInterval().mean(), range(r.finalInterval(), "%.4f"), r.config().diverged(),
                        p(r.finalTest()), r.finalVerdict() == null ? "baseline"
                                : lossVerdict(r.finalVerdict())));
            }
            pairedTable(md, a);
        }
        md.append(StudyBatchSize.section(analyses));
        if (quiet != null) {
            md.append(quietness(quiet));
        }
        return md.toString();
    }

    /** Rule 9's numbers: each time per step with its interval over rounds, the ratios to AdamW, the seconds' p. */
    private static void secondsTable(StringBuilder md, SettingAnalysis a) {
        Row base = a.rows().get(0);
        if (a.rows().stream().allMatch(r -> r.time() == null)) {
            return;
        }
        md.append("\nSeconds (rule 9): the time per step is the mean over the timing pass's rounds with its 95 % "
                + "interval over them; the ratios are of the means, to AdamW's; the seconds to the target get "
                + "Welch's test as the steps do.\n\n");
        md.append("| optimizer | rounds | ms/step | 95 % interval | steps / AdamW's | seconds / AdamW's "
                + "| seconds Welch p |\n");
        md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (Row r : a.rows()) {
            boolean isBase = r == base;
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s |%n", r.config().label(),
                    r.time() == null ? "-" : Integer.toString(r.time().msPerRound().length),
                    r.time() == null ? "-" : String.format(Locale.ROOT, "%.1f", r.time().interval().mean()),
                    r.time() == null ? "-" : range(r.time().interval(), "%.1f"),
                    isBase ? "-" : String.format(Locale.ROOT, "%.2f", r.stepsInterval().mean()
                            / base.stepsInterval().mean()),
                    isBase || r.secondsInterval() == null || base.secondsInterval() == null ? "-"
                            : String.format(Locale.ROOT, "%.2f", r.secondsInterval().mean()
                            / base.secondsInterval().mean()),
                    p(r.secondsTest())));
        }
    }

    /** What the censored runs do to each row's numbers. */
    private static void censoring(StringBuilder md, SettingAnalysis a) {
        int length = a.setting().steps();
        List<String> notes = new ArrayList<>();
        for (Row r : a.rows()) {
            if (r.censored() == 0) {
                continue;
            }
            int n = r.steps().length;
            if (r.neverReached()) {
                notes.add(String.format(Locale.ROOT, "- %s: not reached, %d of %d runs censored at %d steps: its "
                        + "steps and seconds are the run length's, not a measurement, and their tests against AdamW "
                        + "say nothing of its speed.", r.config().label(), r.censored(), n, length));
            } else {
                String note = String.format(Locale.ROOT, "- %s: %d of %d runs censored at %d steps and counted as "
                        + "%d: its mean (%.0f) is a lower bound of its steps", r.config().label(), r.censored(), n,
                        length, length, r.stepsInterval().mean());
                if (r.stepsInterval().high() > length) {
                    note += String.format(Locale.ROOT, ", and its interval's upper end (%.0f) passes the run length, "
                            + "which no run can: the interval is not meaningful past %d steps, nor the seconds' "
                            + "past the run length's seconds", r.stepsInterval().high(), length);
                }
                notes.add(note + ".");
            }
        }
        if (!notes.isEmpty()) {
            md.append("\nCensored runs (rule 6):\n\n");
            notes.forEach(n -> md.append(n).append('\n'));
        }
    }

    /** The variants against MuonAdamW, paired by seed. */
    private static void pairedTable(StringBuilder md, SettingAnalysis a) {
        if (a.paired().isEmpty()) {
            return;
        }
        md.append("\nThe variants against MuonAdamW, paired by seed (not in the protocol: the seeds share initial "
                + "weights and batches; the paired t-test on the differences, variant less MuonAdamW; no correction "
                + "for the number of tests; steps not given where every pair is censored):\n\n");
        md.append("| variant | seeds | censored pairs | steps: mean difference | 95 % interval | fewer on "
                + "| paired p | final loss: mean difference | 95 % interval | lower on | paired p |\n");
        md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (PairedRow r : a.paired()) {
            boolean steps = r.steps() != null && r.censored() < r.seeds();
            md.append(String.format(Locale.ROOT, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    r.config().label(), r.seeds(), r.censored(),
                    steps ? String.format(Locale.ROOT, "%.1f", r.steps().difference().mean()) : "-",
                    steps ? range(r.steps().difference(), "%.1f") : "-",
                    steps ? r.steps().lower() + " of " + r.seeds() : "-",
                    steps ? String.format(Locale.ROOT, "%.3g", r.steps().p()) : "-",
                    r.finals() == null ? "-" : String.format(Locale.ROOT, "%.4f", r.finals().difference().mean()),
                    r.finals() == null ? "-" : range(r.finals().difference(), "%.4f"),
                    r.finals() == null ? "-" : r.finals().lower() + " of " + r.seeds(),
                    r.finals() == null ? "-" : String.format(Locale.ROOT, "%.3g", r.finals().p())));
        }
    }

    /** The timing pass's section: its load average and how close the thread CPU time came to the wall time. */
    static String quietness(StudyTiming.Quietness q) {
        StringBuilder md = new StringBuilder("\n## The timing pass (rule 9)\n\n");
        md.append(String.format(Locale.ROOT, "Pass %s: %d timed rounds; the load average, read before and after "
                        + "each round, %s; the thread CPU time per step within %.2f %% of the wall time in every "
                        + "round, and within %.1f %% in %d of %d rounds.%n", String.join(", ", q.passes()),
                q.rounds(), Double.isNaN(q.loadLow()) ? "unknown" : String.format(Locale.ROOT, "%.2f to %.2f",
                        q.loadLow(), q.loadHigh()), Math.ceil(1e4 * q.maxCpuGap()) / 100, 100 * q.tolerance(), q.within(),
                q.rounds()));
        return md.toString();
    }

    /** The rule's verdict on a loss: lower is better. */
    static String lossVerdict(StudyStats.Verdict v) {
        return switch (v) {
            case FASTER -> "lower";
            case SLOWER -> "higher";
            case NO_DIFFERENCE -> v.toString();
        };
    }

    private static void sweepTable(StringBuilder md, String lrName, Map<Double, Config> sweep, double best) {
        md.append("| ").append(lrName).append(" | seeds | final val loss | 95 % interval | diverged |\n");
        md.append("| ---: | ---: | ---: | ---: | ---: |\n");
        sweep.forEach((lr, c) -> {
            StudyStats.Interval i = StudyStats.interval(c.finals());
            md.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %d |%n", StudyCell.lr(lr), c.runs().size(),
                    Double.isFinite(i.mean()) ? String.format(Locale.ROOT, lr == best ? "**%.4f**" : "%.4f",
                            i.mean()) : "diverged", range(i, "%.4f"), c.diverged()));
        });
    }

    private static String range(StudyStats.Interval i, String format) {
        if (!Double.isFinite(i.halfWidth())) {
            return "-";
        }
        return String.format(Locale.ROOT, format + " to " + format, i.low(), i.high());
    }

    private static String p(StudyStats.Welch w) {
        return w == null ? "-" : String.format(Locale.ROOT, "%.3g", w.p());
    }

    /** The summary CSV: one row per compared configuration of each setting. */
    static String summaryCsv(List<SettingAnalysis> analyses) {
        StringBuilder csv = new StringBuilder("width,batch,steps,optimizer,adamw_lr,muon_lr,seeds,target,"
                + "steps_mean,steps_low,steps_high,censored,steps_p,steps_verdict,ms_per_step,seconds_mean,"
                + "seconds_low,seconds_high,seconds_verdict,final_mean,final_low,final_high,final_p,final_verdict,"
                + "ms_per_step_low,ms_per_step_high,seconds_p\n");
        for (SettingAnalysis a : analyses) {
            for (Row r : a.rows()) {
                Config c = r.config();
                csv.append(String.join(",", Integer.toString(a.setting().width()),
                        Integer.toString(a.setting().batch()), Integer.toString(a.setting().steps()), c.arm().id(),
                        Double.toString(c.adamwLr()), Double.toString(c.muonLr()), Integer.toString(c.runs().size()),
                        f(a.target()), f(r.stepsInterval().mean()), f(r.stepsInterval().low()),
                        f(r.stepsInterval().high()), Integer.toString(r.censored()),
                        r.stepsTest() == null ? "" : f(r.stepsTest().p()),
                        r.stepsVerdict() == null ? "baseline" : r.neverReached() ? "not reached"
                                : r.stepsVerdict().toString(),
                        r.time() == null ? "" : f(r.time().interval().mean()),
                        r.secondsInterval() == null ? "" : f(r.secondsInterval().mean()),
                        r.secondsInterval() == null ? "" : f(r.secondsInterval().low()),
                        r.secondsInterval() == null ? "" : f(r.secondsInterval().high()),
                        r.secondsVerdict() == null ? "" : r.secondsVerdict().toString(),
                        f(r.finalInterval().mean()), f(r.finalInterval().low()), f(r.finalInterval().high()),
                        r.finalTest() == null ? "" : f(r.finalTest().p()),
                        r.finalVerdict() == null ? "baseline" : lossVerdict(r.finalVerdict()),
                        r.time() == null ? "" : f(r.time().interval().low()),
                        r.time() == null ? "" : f(r.time().interval().high()),
                        r.secondsTest() == null ? "" : f(r.secondsTest().p()))).append('\n');
            }
        }
        return csv.toString();
    }

    private static String f(double value) {
        return Double.isFinite(value) ? String.format(Locale.ROOT, "%.6g", value) : "";
    }
}
