package dev.muon.examples.study;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.stream.LongStream;

/**
 * The second study's protocol as cells to run (docs/examples.md, "The second study: protocol"). Four stages, each
 * a corpus and a budget: GCIDE at {@code B1}, {@code B2}, {@code B3} and FOLDOC at {@code B1}. In each, AdamW is
 * tuned first (at GCIDE {@code B1} over lr × β2 × weight decay, elsewhere over its lr at GCIDE {@code B1}'s β2 and
 * weight decay), then AdamW-2lr over its hidden lr and {@code MuonAdamW} over its Muon lr (at GCIDE {@code B1}
 * also over its AdamW side's lr), then, at GCIDE {@code B1} only, the ten variants over their own grids; every
 * tuning configuration at the {@link #TUNING_SEEDS}. Then each tuned configuration runs at the
 * {@link #CONFIRMATION_SEEDS}. The later stages wait for GCIDE {@code B1}'s AdamW and {@code MuonAdamW} tuning.
 *
 * <p>{@link #pending} is a function of the finished runs' final losses only, so a sweep that stopped anywhere goes
 * on by asking again. A grid's best configuration has the lowest mean final loss over the tuning seeds (a diverged
 * run, NaN, is worse than any; a tie goes to the smaller lr); if its lr is at an edge of its lr axis, one point a
 * factor 2 beyond runs, at most {@link #MAX_EXTENSIONS} per side, and a best lr still at an edge after that is
 * reported as such ({@link Progress#atEdge}).
 */
final class SecondPlan {
    /** The model: width, blocks, heads, context; batch windows; evaluations after step 0. */
    static final int WIDTH = 128;
    static final int LAYERS = 2;
    static final int HEADS = 4;
    static final int CONTEXT = 64;
    static final int BATCH = 32;
    static final int EVALS = 25;
    /** The budgets in steps: 4.8, 9.5 and 20.0 characters per parameter of the 429,664. */
    static final List<Integer> BUDGETS = List.of(1000, 2000, 4200);
    static final List<Double> ADAMW_LRS = List.of(5e-4, 1e-3, 2e-3, 4e-3, 8e-3);
    static final List<Double> BETA2S = List.of(0.95, 0.99, 0.999);
    static final List<Double> WEIGHT_DECAYS = List.of(0.0, 0.1);
    /** AdamW-2lr's hidden lr as factors of AdamW's tuned lr; 1 is plain AdamW in two groups. */
    static final List<Double> HIDDEN_FACTORS = List.of(0.5, 1.0, 2.0, 4.0, 8.0);
    static final List<Double> MUON_LRS = List.of(1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2);
    /** MuonAdamW's AdamW-side lr as factors of AdamW's tuned lr, swept at GCIDE B1 only. */
    static final List<Double> ADAMW_SIDE_FACTORS = List.of(0.5, 1.0, 2.0);
    /** Hyperball's radii: 0 keeps each matrix's initial norm (about 6.5 and 13 here). */
    static final List<Double> HYPERBALL_RADII = List.of(0.0, 8.0, 16.0);
    static final List<Long> TUNING_SEEDS = List.of(1L, 2L, 3L);
    static final List<Long> CONFIRMATION_SEEDS = LongStream.rangeClosed(1001, 1008).boxed().toList();
    static final int MAX_EXTENSIONS = 1;
    /** The stated budget, and the CPU-seconds per step the estimate uses (the first study's median runs). */
    static final double BUDGET_CPU_HOURS = 40;
    static final double ADAMW_CPU_S_PER_STEP = 0.125;
    static final double MUON_CPU_S_PER_STEP = 0.147;
    /** The timing pass's estimate: about 8 minutes on both cores. */
    static final double TIMING_CPU_S = 1000;

    /** A corpus at a budget. */
    record Stage(String corpus, int steps) {
        /** Such as {@code gcide-1000}. */
        String id() {
            return corpus + "-" + steps;
        }
    }

    /** The stages, in order; the first is where β2, weight decay, the AdamW side and the variants are tuned. */
    static final List<Stage> STAGES = List.of(new Stage("gcide", 1000), new Stage("gcide", 2000),
            new Stage("gcide", 4200), new Stage("foldoc", 1000));

    private SecondPlan() {
    }

    /**
     * Where a stage stands.
     *
     * @param stage   the stage
     * @param phase   a word for the report: waiting, tuning, confirmation, done
     * @param pending its next cells
     * @param tuned   each arm's tuned configuration found so far (seed 0)
     * @param atEdge  the arms among them whose tuned lr is still at an edge of its lr axis, the extensions spent
     */
    record Progress(Stage stage, String phase, List<SecondCell> pending, Map<SecondArm, SecondCell> tuned,
                    Set<SecondArm> atEdge) {
    }

    /**
     * The cells the protocol needs next and the results do not hold, stage by stage.
     *
     * @param finals the finished runs' final validation losses by cell key (NaN for a diverged run)
     * @return the cells
     */
    static List<SecondCell> pending(Map<String, Double> finals) {
        List<SecondCell> out = new ArrayList<>();
        for (Stage s : STAGES) {
            out.addAll(progress(s, finals).pending());
        }
        return out;
    }

    /**
     * Where a stage stands.
     *
     * @param stage  the stage
     * @param finals the final losses by cell key
     * @return the progress
     */
    static Progress progress(Stage stage, Map<String, Double> finals) {
        Stage first = STAGES.get(0);
        boolean isFirst = stage.equals(first);
        Map<SecondArm, SecondCell> tuned = new EnumMap<>(SecondArm.class);
        Set<SecondArm> atEdge = EnumSet.noneOf(SecondArm.class);
        List<double[]> adamwOthers = new ArrayList<>();
        double sideFactor = Double.NaN;
        if (isFirst) {
            for (double b2 : BETA2S) {
                for (double wd : WEIGHT_DECAYS) {
                    adamwOthers.add(new double[] {b2, wd});
                }
            }
        } else {
            Progress f = progress(first, finals);
            SecondCell a = f.tuned().get(SecondArm.ADAMW);
            SecondCell m = f.tuned().get(SecondArm.MUON);
            if (a == null || m == null) {
                return new Progress(stage, "waiting for " + first.id() + "'s tuning", List.of(), tuned, atEdge);
            }
            adamwOthers.add(new double[] {a.beta2(), a.weightDecay()});
            sideFactor = m.adamwLr() / a.adamwLr();
        }
        Tuned adamw = tune(adamwOthers, ADAMW_LRS, (o, lr) -> new SecondCell(SecondArm.ADAMW, stage.corpus(),
                stage.steps(), lr, o[0], o[1], Double.NaN, Double.NaN, 0), finals);
        if (adamw.best() == null) {
            return new Progress(stage, "tuning adamw", adamw.pending(), tuned, atEdge);
        }
        SecondCell a = adamw.best();
        List<SecondCell> pending = new ArrayList<>();
        put(tuned, atEdge, SecondArm.ADAMW, adamw, pending);
        Tuned twoLr = tune(List.of(0.0), times(a.adamwLr(), HIDDEN_FACTORS), (o, lr) -> new SecondCell(
                SecondArm.ADAMW_2LR, stage.corpus(), stage.steps(), a.adamwLr(), a.beta2(), a.weightDecay(), lr,
                Double.NaN, 0), finals);
        List<Double> sides = isFirst ? times(a.adamwLr(), ADAMW_SIDE_FACTORS) : List.of(a.adamwLr() * sideFactor);
        Tuned muon = tune(sides, MUON_LRS, (side, lr) -> new SecondCell(SecondArm.MUON, stage.corpus(),
                stage.steps(), side, a.beta2(), a.weightDecay(), lr, Double.NaN, 0), finals);
        put(tuned, atEdge, SecondArm.ADAMW_2LR, twoLr, pending);
        put(tuned, atEdge, SecondArm.MUON, muon, pending);
        if (muon.best() != null && isFirst) {
            SecondCell m = muon.best();
            for (SecondArm v : SecondArm.VARIANTS) {
                List<Double> radii = v == SecondArm.HYPERBALL ? HYPERBALL_RADII : java.util.Collections.singletonList(
                        Double.NaN);
                Tuned t = tune(radii, times(m.lr2(), v.lrFactors()), (radius, lr) -> new SecondCell(v,
                        stage.corpus(), stage.steps(), m.adamwLr(), m.beta2(), m.weightDecay(), lr, radius, 0),
                        finals);
                put(tuned, atEdge, v, t, pending);
            }
        }
        if (!pending.isEmpty() || muon.best() == null) {
            return new Progress(stage, "tuning", pending, tuned, atEdge);
        }
        for (SecondCell c : tuned.values()) {
            pending.addAll(c.missing(CONFIRMATION_SEEDS, finals));
        }
        return new Progress(stage, pending.isEmpty() ? "done" : "confirmation", pending, tuned, atEdge);
    }

    private static void put(Map<SecondArm, SecondCell> tuned, Set<SecondArm> atEdge, SecondArm arm, Tuned t,
                            List<SecondCell> pending) {
        if (t.best() != null) {
            tuned.put(arm, t.best());
            if (t.atEdge()) {
                atEdge.add(arm);
            }
        }
        pending.addAll(t.pending());
    }

    private static List<Double> times(double base, List<Double> factors) {
        return factors.stream().map(f -> base * f).toList();
    }

    /**
     * One grid's state: its missing cells, or, when none is missing, its best configuration (seed 0) and whether
     * its lr is still at an edge of its lr axis.
     */
    private record Tuned(List<SecondCell> pending, SecondCell best, boolean atEdge) {
    }

    /**
     * A grid over {@code others} × an lr axis, the lr axis extended at the best configuration's other point while
     * its lr is at an edge, up to {@link #MAX_EXTENSIONS} a side. The best has the lowest mean final loss; of
     * equal means, the smaller lr (the protocol's tie rule, across the other settings too), then the first found.
     */
    private static <O> Tuned tune(List<O> others, List<Double> lrs, BiFunction<O, Double, SecondCell> cell,
                                  Map<String, Double> finals) {
        List<List<Double>> grid = new ArrayList<>();
        others.forEach(o -> grid.add(new ArrayList<>(lrs)));
        int[] below = new int[others.size()];
        int[] above = new int[others.size()];
        while (true) {
            List<SecondCell> missing = new ArrayList<>();
            SecondCell best = null;
            int bestOther = -1;
            double bestMean = Double.POSITIVE_INFINITY;
            for (int o = 0; o < others.size(); o++) {
                for (double lr : grid.get(o)) {
                    SecondCell c = cell.apply(others.get(o), lr);
                    missing.addAll(c.missing(TUNING_SEEDS, finals));
                    double mean = meanFinal(c, finals);
                    if (best == null || mean < bestMean || mean == bestMean && lrOf(c) < lrOf(best)) {
                        best = c;
                        bestOther = o;
                        bestMean = mean;
                    }
                }
            }
            if (!missing.isEmpty()) {
                return new Tuned(missing, null, false);
            }
            List<Double> g = grid.get(bestOther);
            double bestLr = lrOf(best);
            if (bestLr == g.get(0) && below[bestOther] < MAX_EXTENSIONS) {
                g.add(0, g.get(0) / 2);
                below[bestOther]++;
            } else if (bestLr == g.get(g.size() - 1) && above[bestOther] < MAX_EXTENSIONS) {
                g.add(g.get(g.size() - 1) * 2);
                above[bestOther]++;
            } else {
                return new Tuned(List.of(), best, bestLr == g.get(0) || bestLr == g.get(g.size() - 1));
            }
        }
    }

    /** The swept lr of a cell: AdamW's for AdamW, the second lr for the others. */
    static double lrOf(SecondCell c) {
        return c.arm() == SecondArm.ADAMW ? c.adamwLr() : c.lr2();
    }

    /** The mean final loss over the tuning seeds; +∞ if any run diverged or is missing. */
    private static double meanFinal(SecondCell c, Map<String, Double> finals) {
        double sum = 0;
        for (long seed : TUNING_SEEDS) {
            Double f = finals.get(c.withSeed(seed).key());
            if (f == null || !Double.isFinite(f)) {
                return Double.POSITIVE_INFINITY;
            }
            sum += f;
        }
        return sum / TUNING_SEEDS.size();
    }

    /**
     * A run's estimated CPU-seconds: its steps times the first study's measured CPU-seconds per step of its kind.
     *
     * @param c the cell
     * @return the estimate
     */
    static double cpuSeconds(SecondCell c) {
        return c.steps() * (c.arm().muon() ? MUON_CPU_S_PER_STEP : ADAMW_CPU_S_PER_STEP);
    }
}
