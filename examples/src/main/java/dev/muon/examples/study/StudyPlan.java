package dev.muon.examples.study;

import dev.muon.examples.SampleStats;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The study's protocol as cells to run (docs/examples.md, "MuonStudy: the protocol"): for each setting (a width
 * and a batch size), AdamW over its lr grid, then {@code MuonAdamW} over its Muon lr grid with its AdamW side at
 * AdamW's best lr, then, where variants are asked for, the variants at the best lrs; every configuration at each
 * seed. A grid whose best lr is at an edge is extended by one grid step beyond that edge, up to
 * {@link #maxExtensions} times a side, before the next phase starts.
 *
 * <p>{@link #pending} is a function of the finished runs only: the cells to run next are the ones the protocol
 * needs and the results do not hold, so a sweep that stopped anywhere goes on by asking again.
 *
 * @param settings       the settings, in the order they run
 * @param variantsAt     the settings whose variants run (a subset of {@code settings})
 * @param adamwLrs       AdamW's lr grid, ascending, a constant ratio apart
 * @param muonLrs        the Muon lr grid, ascending, a constant ratio apart
 * @param seeds          the seeds of every configuration
 * @param maxExtensions  how many points a grid may grow by on each side
 */
record StudyPlan(List<StudySetting> settings, List<StudySetting> variantsAt, List<Double> adamwLrs,
                 List<Double> muonLrs, List<Long> seeds, int maxExtensions) {
    /** The protocol's AdamW lrs: five points, a factor 2 apart. */
    static final List<Double> ADAMW_LRS = List.of(5e-4, 1e-3, 2e-3, 4e-3, 8e-3);
    /** The protocol's Muon lrs ({@code MATCH_RMS_ADAMW}, AdamW's units): five points, a factor 2 apart. */
    static final List<Double> MUON_LRS = List.of(1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2);
    /** Seeds 1 to 5. */
    static final List<Long> SEEDS = List.of(1L, 2L, 3L, 4L, 5L);
    /** Characters of training per run: 1,000 steps of 32 windows of 64, or 250 of 128. */
    static final long TOKENS = 2_048_000;
    /** Evaluations per run after step 0. */
    static final int EVALS = 25;
    /** Hyperball runs at the best Muon lr and at this multiple of it (its lr is an angle, see the docs). */
    static final double HYPERBALL_LR_FACTOR = 4;

    /**
     * Validates the plan.
     *
     * @throws IllegalArgumentException naming the option, the rule and the value
     */
    StudyPlan {
        settings = List.copyOf(settings);
        variantsAt = List.copyOf(variantsAt);
        adamwLrs = List.copyOf(adamwLrs);
        muonLrs = List.copyOf(muonLrs);
        seeds = List.copyOf(seeds);
        if (settings.isEmpty()) {
            throw new IllegalArgumentException("--settings must name at least one WIDTHxBATCH, got none");
        }
        for (StudySetting v : variantsAt) {
            if (!settings.contains(v)) {
                throw new IllegalArgumentException("--variants-at must be among --settings, got " + v.id());
            }
        }
        ratio("--adamw-lrs", adamwLrs);
        ratio("--muon-lrs", muonLrs);
        if (seeds.isEmpty() || seeds.stream().distinct().count() != seeds.size()) {
            throw new IllegalArgumentException("--seeds must be at least one distinct seed, got " + seeds);
        }
        if (maxExtensions < 0) {
            throw new IllegalArgumentException("--max-extensions must be >= 0, got " + maxExtensions);
        }
    }

    /** A grid: ascending, positive, a constant ratio apart (within rounding), so that it can be extended. */
    private static void ratio(String option, List<Double> lrs) {
        if (lrs.isEmpty()) {
            throw new IllegalArgumentException(option + " must hold at least one lr, got none");
        }
        for (int i = 0; i < lrs.size(); i++) {
            if (!(lrs.get(i) > 0) || !Double.isFinite(lrs.get(i))) {
                throw new IllegalArgumentException(option + " must hold finite lrs > 0, got " + lrs.get(i));
            }
            if (i > 0 && !(lrs.get(i) > lrs.get(i - 1))) {
                throw new IllegalArgumentException(option + " must be ascending, got " + lrs);
            }
            if (i > 1 && Math.abs(lrs.get(i) / lrs.get(i - 1) / (lrs.get(1) / lrs.get(0)) - 1) > 1e-6) {
                throw new IllegalArgumentException(option + " must be a log grid (a constant ratio between "
                        + "neighbours), got " + lrs);
            }
        }
    }

    /** The ratio between neighbours of a grid; 2 for a grid of one point. */
    private static double step(List<Double> lrs) {
        return lrs.size() < 2 ? 2 : lrs.get(1) / lrs.get(0);
    }

    /** Where a setting's phases stand. */
    record Progress(StudySetting setting, double bestAdamwLr, double bestMuonLr, List<StudyCell> pending,
                    String phase) {
    }

    /**
     * The cells the protocol needs next and the results do not hold, in the order to run them: each setting in
     * turn, the phase it has reached.
     *
     * @param done the finished runs by cell key
     * @return the cells
     */
    List<StudyCell> pending(Map<String, StudyResult> done) {
        List<StudyCell> out = new ArrayList<>();
        for (StudySetting s : settings) {
            out.addAll(progress(s, done).pending());
        }
        return out;
    }

    /**
     * Where one setting stands: the best lrs found so far (NaN before their phase is complete) and its next cells.
     *
     * @param s    the setting
     * @param done the finished runs by cell key
     * @return the progress
     */
    Progress progress(StudySetting s, Map<String, StudyResult> done) {
        Grid adamw = grid(adamwLrs, lr -> s.cell(StudyArm.ADAMW, lr, Double.NaN, 0), done);
        if (!adamw.pending().isEmpty()) {
            return new Progress(s, Double.NaN, Double.NaN, adamw.pending(), "adamw lr sweep");
        }
        double a = adamw.best();
        Grid muon = grid(muonLrs, lr -> s.cell(StudyArm.MUON, a, lr, 0), done);
        if (!muon.pending().isEmpty()) {
            return new Progress(s, a, Double.NaN, muon.pending(), "muon lr sweep");
        }
        double m = muon.best();
        List<StudyCell> variants = new ArrayList<>();
        if (variantsAt.contains(s)) {
            for (StudyCell c : variantCells(s, a, m)) {
                variants.addAll(c.missing(seeds, done));
            }
        }
        return new Progress(s, a, m, variants, variants.isEmpty() ? "done" : "variants");
    }

    /** The variants' configurations at the best lrs (seed 0: one per configuration). */
    static List<StudyCell> variantCells(StudySetting s, double adamwLr, double muonLr) {
        return List.of(s.cell(StudyArm.NORMUON, adamwLr, muonLr, 0), s.cell(StudyArm.CAUTIOUS_WD, adamwLr, muonLr, 0),
                s.cell(StudyArm.BF16_MOMENTUM, adamwLr, muonLr, 0), s.cell(StudyArm.HYPERBALL, adamwLr, muonLr, 0),
                s.cell(StudyArm.HYPERBALL, adamwLr, muonLr * HYPERBALL_LR_FACTOR, 0));
    }

    /** One lr sweep's state: its missing cells, or, when none is missing, its best lr. */
    private record Grid(List<StudyCell> pending, double best) {
    }

    /**
     * A sweep over a grid, extended while its best lr is at an edge: the cells of every lr that are missing, or
     * the best lr when all are there.
     */
    private Grid grid(List<Double> base, java.util.function.DoubleFunction<StudyCell> config,
                      Map<String, StudyResult> done) {
        List<Double> lrs = new ArrayList<>(base);
        double ratio = step(base);
        int below = 0;
        int above = 0;
        while (true) {
            List<StudyCell> missing = new ArrayList<>();
            TreeMap<Double, double[]> finals = new TreeMap<>();
            for (double lr : lrs) {
                StudyCell c = config.apply(lr);
                missing.addAll(c.missing(seeds, done));
                finals.put(lr, finals(c, done));
            }
            if (!missing.isEmpty()) {
                return new Grid(missing, Double.NaN);
            }
            double best = best(finals);
            if (best == lrs.get(0) && below < maxExtensions) {
                lrs.add(0, lrs.get(0) / ratio);
                below++;
            } else if (best == lrs.get(lrs.size() - 1) && above < maxExtensions) {
                lrs.add(lrs.get(lrs.size() - 1) * ratio);
                above++;
            } else {
                return new Grid(List.of(), best);
            }
        }
    }

    /**
     * The lr with the lowest mean final validation loss over its seeds; a diverged run's NaN counts as worse than
     * any loss; a tie goes to the smaller lr.
     *
     * @param finals each lr's final losses over the seeds
     * @return the best lr
     */
    static double best(Map<Double, double[]> finals) {
        double bestLr = Double.NaN;
        double bestMean = Double.POSITIVE_INFINITY;
        for (Map.Entry<Double, double[]> e : new TreeMap<>(finals).entrySet()) {
            double mean = SampleStats.mean(e.getValue());
            double score = Double.isNaN(mean) ? Double.POSITIVE_INFINITY : mean;
            if (Double.isNaN(bestLr) || score < bestMean) {
                bestLr = e.getKey();
                bestMean = score;
            }
        }
        return bestLr;
    }

    /** A configuration's final losses over the seeds (all present). */
    private double[] finals(StudyCell config, Map<String, StudyResult> done) {
        return seeds.stream().map(seed -> done.get(config.withSeed(seed).key()))
                .mapToDouble(r -> r == null ? Double.NaN : r.finalValLoss()).toArray();
    }

    /**
     * Parses {@code WIDTHxBATCH} into a setting with the given model, run length and weight decay.
     *
     * @param text    such as {@code 128x32}
     * @param option  the option, for messages
     * @param layers  transformer blocks
     * @param heads   attention heads
     * @param context characters per input
     * @param tokens  characters of training per run: steps = tokens / (batch × context)
     * @param evals   evaluations after step 0
     * @param weightDecay the weight decay
     * @return the setting
     * @throws IllegalArgumentException naming the option, the rule and the value
     */
    static StudySetting setting(String text, String option, int layers, int heads, int context, long tokens,
                                int evals, double weightDecay) {
        String[] parts = text.trim().toLowerCase(Locale.ROOT).split("x");
        int width;
        int batch;
        try {
            if (parts.length != 2) {
                throw new NumberFormatException();
            }
            width = Integer.parseInt(parts[0]);
            batch = Integer.parseInt(parts[1]);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " takes WIDTHxBATCH settings such as 128x32, got '" + text
                    + "'");
        }
        long steps = tokens / ((long) batch * context);
        if (width < 1 || batch < 1 || width % heads != 0) {
            throw new IllegalArgumentException(option + " " + text + ": width and batch must be >= 1 and the "
                    + "width a multiple of the " + heads + " heads");
        }
        if (steps < evals || steps > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(option + " " + text + ": --tokens " + tokens + " give " + steps
                    + " steps of " + batch + " windows of " + context + ", fewer than the " + evals + " evaluations");
        }
        return new StudySetting(width, batch, layers, heads, context, (int) steps, evals, weightDecay);
    }
}
