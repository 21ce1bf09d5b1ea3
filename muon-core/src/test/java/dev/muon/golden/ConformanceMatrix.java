package dev.muon.golden;

import dev.muon.ConvWeights;
import dev.muon.HyperballConfig;
import dev.muon.MomentumPrecision;
import dev.muon.MuonConfig;
import dev.muon.MuownConfig;
import dev.muon.Orthogonalization;
import dev.muon.RadialBrakeConfig;
import dev.muon.RelativeUpdateConfig;
import dev.muon.StackedWeights;
import dev.muon.UpdateFloorConfig;
import dev.muon.UpdateRecipe;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.NsPreconditioning;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The conformance matrix's rows, shared by every binding's tests: every element of the update recipe
 * ({@link UpdateRecipe}'s momentum, orthogonalizer, Newton–Schulz precision and algorithm, row scaling, applier
 * and weight hook; Hyperball with its own norm and with a fixed radius; Muown, whose momentum element comes with
 * its applier) and each layout a parameter can have (a matrix, a flattened
 * conv filter, a stack), alone and in every pair of two different settings. A binding's test runs each row in each
 * of its columns (parameter dtype, storage place, driver) against {@link Float64Update}, the one float64 reference
 * written from the formulas, within the column's {@link Dtype#bound}, or expects the binding's refusal at build.
 *
 * <p>The rows are generated: each recipe element's value is mapped to the config that selects it by an exhaustive
 * {@code switch}, so a value added to the recipe does not compile until it has its row, and then its cells (alone and
 * paired with every other element) exist in every binding's matrix at once. A pair the config itself refuses
 * (Hyperball with cautious decay) is a row whose config is the refusal's message.
 *
 * <p>Cheap shapes keep the whole matrix inside CI's time: a 6 × 10 matrix, a 4 × 2 × 1 × 3 conv filter (6 columns
 * once flattened) and a stack of two 4 × 6 matrices, three steps each.
 */
public final class ConformanceMatrix {
    /** The steps a cell runs. */
    public static final int STEPS = 3;

    private ConformanceMatrix() {
    }

    /**
     * One choice of one setting: a recipe element's value other than the default, or a layout.
     *
     * @param setting the setting it belongs to; two choices of one setting never pair
     * @param name    the value, for a cell's name
     * @param change  the config change that selects it
     * @param shape   the parameter's shape it needs, or null for the plain matrix
     */
    public record Choice(String setting, String name, UnaryOperator<MuonConfig> change, long[] shape) {
        @Override
        public String toString() {
            return name;
        }
    }

    /**
     * One row: its choices, and the config they make (or the config's refusal).
     *
     * @param name      the choices, joined
     * @param choices   the choices
     * @param config    the config, or null when the config refuses the pair
     * @param refusal   the config's refusal, or null
     * @param shape     the parameter's shape
     */
    public record Row(String name, List<Choice> choices, MuonConfig config, String refusal, long[] shape) {
        /** The matrices of a stack, 1 otherwise. */
        public int k() {
            return shape.length == 3 ? (int) shape[0] : 1;
        }

        /** The rows of each matrix (a conv filter's output channels). */
        public int m() {
            return (int) shape[shape.length == 3 ? 1 : 0];
        }

        /** Whether any choice is this one. */
        public boolean has(String choice) {
            return choices.stream().anyMatch(c -> c.name().equals(choice));
        }

        @Override
        public String toString() {
            return name;
        }
    }

    /**
     * A parameter dtype of a column, with its bound.
     *
     * <p>The bound on a cell's relative parameter error after {@link #STEPS} steps is the larger of the iteration's
     * (Newton–Schulz in float64: the combination table's 1e-10; float32: the golden README's 1e-5; bfloat16: its
     * bfloat16 bound on an update, 5e-2, as many steps) and the dtype's own: ten unit roundoffs of the parameter's
     * dtype (the parameter, its momentum and each factor are rounded to it at every step).
     */
    public enum Dtype {
        FLOAT64(0, NsPrecision.FLOAT64),
        FLOAT32(1e-5, NsPrecision.FLOAT32),
        BFLOAT16(10 * Math.scalb(1.0, -8), NsPrecision.FLOAT32),
        FLOAT16(10 * Math.scalb(1.0, -11), NsPrecision.FLOAT32);

        private final double roundoffs;
        private final NsPrecision precision;

        Dtype(double roundoffs, NsPrecision precision) {
            this.roundoffs = roundoffs;
            this.precision = precision;
        }

        /** The Newton–Schulz precision a cell of this dtype runs at unless its row chooses one. */
        public NsPrecision defaultPrecision() {
            return precision;
        }

        /**
         * The bound of a row's cell in this dtype.
         *
         * @param config the cell's config
         * @return the relative bound on the parameter after {@link #STEPS} steps
         */
        public double bound(MuonConfig config) {
            double iteration = config.orthogonalization() == Orthogonalization.EXACT_SVD ? 1e-10
                    : switch (config.nsPrecision()) {
                        case FLOAT64 -> 1e-10;
                        case FLOAT32 -> 1e-5;
                        case BFLOAT16 -> 5e-2 * STEPS;
                    };
            return Math.max(iteration, roundoffs);
        }
    }

    /** The base of every row: momentum, Nesterov, weight decay, an lr large enough that a wrong setting shows. */
    private static final MuonConfig BASE = MuonConfig.defaults().withLr(0.05).withWeightDecay(0.2)
            .withConvWeights(ConvWeights.FLATTEN).withStackedWeights(StackedWeights.BATCH);
    private static final long[] MATRIX = {6, 10};

    /** Every choice, from the recipe's elements and the layouts; an exhaustive switch per element. */
    public static List<Choice> choices() {
        List<Choice> out = new ArrayList<>();
        for (UpdateRecipe.Momentum v : UpdateRecipe.Momentum.values()) {
            switch (v) {
                case EMA -> { }
                case EMA_BFLOAT16_STORED -> out.add(new Choice("momentum", "bfloat16 momentum",
                        c -> c.withMomentumPrecision(MomentumPrecision.BFLOAT16), null));
                // Chosen with Muown's applier, its row below.
                case MUOWN_DIRECTION -> { }
            }
        }
        for (UpdateRecipe.Orthogonalizer v : UpdateRecipe.Orthogonalizer.values()) {
            switch (v) {
                case NEWTON_SCHULZ -> { }
                case EXACT_SVD -> out.add(new Choice("orthogonalizer", "exact SVD",
                        c -> c.withOrthogonalization(Orthogonalization.EXACT_SVD), null));
            }
        }
        for (NsPrecision v : NsPrecision.values()) {
            switch (v) {
                case FLOAT32, FLOAT64, BFLOAT16 -> out.add(new Choice("nsPrecision", "NS " + v,
                        c -> c.withNsPrecision(v), null));
            }
        }
        for (NsAlgorithm v : NsAlgorithm.values()) {
            switch (v) {
                case AUTO -> { }
                case GEMM, SYMMETRIC, GRAM -> out.add(new Choice("nsAlgorithm", v.name(),
                        c -> c.withNsAlgorithm(v), null));
            }
        }
        for (NsPreconditioning v : NsPreconditioning.values()) {
            switch (v) {
                case FROBENIUS -> { }
                case AOL -> out.add(new Choice("nsPreconditioning", "AOL", MuonConfig::withAol, null));
            }
        }
        for (UpdateRecipe.RowScaling v : UpdateRecipe.RowScaling.values()) {
            switch (v) {
                case NONE -> { }
                case NORMUON -> out.add(new Choice("rowScaling", "NorMuon", c -> c.withNorMuon(0.9, 1e-8), null));
            }
        }
        for (UpdateRecipe.Applier v : UpdateRecipe.Applier.values()) {
            switch (v) {
                case DECOUPLED_DECAY -> { }
                case CAUTIOUS_DECAY -> out.add(new Choice("applier", "cautious decay",
                        c -> c.withCautiousWeightDecay(true), null));
                case MUOWN -> out.add(new Choice("applier", "Muown", c -> c.withNesterov(false)
                        .withMuown(MuownConfig.defaults()), null));
            }
        }
        for (UpdateRecipe.WeightHook v : UpdateRecipe.WeightHook.values()) {
            switch (v) {
                case NONE -> { }
                case HYPERBALL -> {
                    out.add(new Choice("weightHook", "Hyperball", c -> c.withWeightDecay(0)
                            .withHyperball(HyperballConfig.defaults()), null));
                    out.add(new Choice("weightHook", "Hyperball radius 3", c -> c.withWeightDecay(0)
                            .withHyperball(HyperballConfig.radius(3)), null));
                }
                // Scales that act at this lr: outward kept at 0.5, inward at 0.75.
                case RADIAL_BRAKE -> out.add(new Choice("weightHook", "RadialBrake",
                        c -> c.withRadialBrake(new RadialBrakeConfig(0.5, 0.75, 1e-12)), null));
                case RELATIVE_UPDATE -> out.add(new Choice("weightHook", "RelativeUpdate",
                        c -> c.withRelativeUpdate(RelativeUpdateConfig.defaults()), null));
                // A floor above the plain step's ratio at this lr, so that it acts: the floor is per unit of lr,
                // 2.0 at lr 0.05 a step of at least 0.1·‖p₀‖.
                case UPDATE_FLOOR -> out.add(new Choice("weightHook", "update floor",
                        c -> c.withUpdateFloor(new UpdateFloorConfig(2.0, false, 1e-12)), null));
                case UPDATE_FLOOR_PER_ROW -> out.add(new Choice("weightHook", "update floor per row",
                        c -> c.withUpdateFloor(new UpdateFloorConfig(2.0, true, 1e-12)), null));
            }
        }
        out.add(new Choice("layout", "conv filter", c -> c, new long[]{4, 2, 1, 3}));
        out.add(new Choice("layout", "stack", c -> c, new long[]{2, 4, 6}));
        return out;
    }

    /**
     * Every row: the plain update, each choice alone, and each pair of choices of two different settings.
     *
     * @param dtype the column's dtype, which sets the Newton–Schulz precision a row does not choose
     * @return the rows, in a fixed order
     */
    public static List<Row> rows(Dtype dtype) {
        List<Choice> all = choices();
        Map<String, List<Choice>> combos = new LinkedHashMap<>();
        combos.put("plain", List.of());
        for (int a = 0; a < all.size(); a++) {
            combos.put(all.get(a).name(), List.of(all.get(a)));
        }
        for (int a = 0; a < all.size(); a++) {
            for (int b = a + 1; b < all.size(); b++) {
                if (!all.get(a).setting().equals(all.get(b).setting())) {
                    combos.put(all.get(a).name() + " with " + all.get(b).name(), List.of(all.get(a), all.get(b)));
                }
            }
        }
        List<Row> rows = new ArrayList<>();
        combos.forEach((name, choices) -> {
            long[] shape = MATRIX;
            for (Choice c : choices) {
                shape = c.shape() == null ? shape : c.shape();
            }
            MuonConfig config = BASE.withNsPrecision(dtype.defaultPrecision());
            try {
                for (Choice c : choices) {
                    config = c.change().apply(config);
                }
                rows.add(new Row(name, choices, config, null, shape));
            } catch (IllegalArgumentException e) {
                rows.add(new Row(name, choices, null, e.getMessage(), shape));
            }
        });
        return rows;
    }

    /**
     * The reference of a row's parameter, started from the values the binding holds (already rounded to its dtype).
     *
     * @param row    the row
     * @param values the parameter's values as the binding holds them, row-major
     * @return the reference, ready for {@link Float64Update#step}
     */
    public static Float64Update reference(Row row, double[] values) {
        return new Float64Update(values, row.k(), row.m(), null, row.config());
    }
}
