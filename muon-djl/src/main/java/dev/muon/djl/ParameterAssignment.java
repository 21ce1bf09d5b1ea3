package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import dev.muon.AdamWConfig;
import dev.muon.AssignmentRule;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * Which optimizer of a {@link MuonAdamW} updates each parameter of the block, and why: a table that prints well
 * ({@link #toString()}), and that the optimizer logs when it classifies the block.
 *
 * <p>The rules are muon-core's ({@link AssignmentRule}, stated in full in {@code dev.muon.Assignment}), applied to
 * the dotted name of each DJL parameter ({@code 01SequentialBlock_03Linear_weight} reads as
 * {@code SequentialBlock.Linear.weight}): hidden matrices (2-D, or 4-D conv filters flattened) go to Muon;
 * biases, norm gains, embeddings (any block whose name contains {@code embed}, such as DJL's
 * {@code TrainableWordEmbedding}), heads by name and the output layer (the last 2-D parameter) go to AdamW. A
 * parameter shared by two blocks is counted once, under its first name, on AdamW. The overrides name parameters
 * as {@code block.getParameters()} does.
 *
 * <pre>{@code
 * System.out.println(optimizer.assignment());
 * }</pre>
 */
public final class ParameterAssignment {
    /**
     * One parameter's row.
     *
     * @param name      DJL's name of the parameter (its key in {@code block.getParameters()})
     * @param shape     its shape
     * @param dtype     its dtype
     * @param optimizer the optimizer that updates it
     * @param reason    why (the rule or override that decided)
     * @param lr        the lr of its first update: Muon's lr times the shape ratio and extra scale, or AdamW's
     *                  lr, each the config's or, with a tracker, the tracker's at step 1
     */
    public record Row(String name, long[] shape, String dtype, OptimizerKind optimizer, String reason, double lr) {
        /**
         * Copies the shape.
         *
         * @throws NullPointerException if a reference is null
         */
        public Row {
            shape = shape.clone();
        }

        /**
         * The shape.
         *
         * @return a copy of the shape
         */
        @Override
        public long[] shape() {
            return shape.clone();
        }
    }

    /**
     * What the builder collected about where parameters go.
     *
     * @param muonRule    a custom rule on (name, shape) that replaces the default one, or null
     * @param forceMuon   names sent to Muon whatever the rule says
     * @param forceAdamW  names sent to AdamW whatever the rule says
     * @param outputLayer whether the last matrix goes to AdamW
     */
    record Rules(BiPredicate<String, Shape> muonRule, Set<String> forceMuon, Set<String> forceAdamW,
                 boolean outputLayer) {
    }

    private final List<Row> rows;
    private final List<String> frozen;
    /** The later names of shared parameters. */
    private final Set<String> aliases;
    /** The optimizer of each parameter id (an alias's id is its first name's). */
    private final Map<String, OptimizerKind> byId;

    private ParameterAssignment(List<Row> rows, List<String> frozen, Set<String> aliases,
                                Map<String, OptimizerKind> byId) {
        this.rows = List.copyOf(rows);
        this.frozen = List.copyOf(frozen);
        this.aliases = Set.copyOf(aliases);
        this.byId = Map.copyOf(byId);
    }

    /**
     * Checks the names of the override lists against the block, which has them before it is initialized.
     *
     * @param model the block's parameters
     * @param rules the overrides
     * @throws IllegalArgumentException if a name is in both lists or names no parameter
     */
    static void checkNames(ModelParameters model, Rules rules) {
        for (String name : rules.forceMuon()) {
            if (rules.forceAdamW().contains(name)) {
                throw new IllegalArgumentException("parameter '" + name
                        + "' is in both forceMuon and forceAdamW; name it in one list only");
            }
        }
        List<String> names = new ArrayList<>();
        model.entries().forEach(e -> names.add(e.name()));
        for (Map.Entry<String, Set<String>> list : List.of(Map.entry("forceMuon", rules.forceMuon()),
                Map.entry("forceAdamW", rules.forceAdamW()))) {
            for (String name : list.getValue()) {
                if (!names.contains(name)) {
                    throw new IllegalArgumentException(list.getKey() + " names '" + name + "', which is not a "
                            + "parameter; parameters are " + names);
                }
            }
        }
    }

    /**
     * Classifies the parameters of an initialized block.
     *
     * @param model the block's parameters
     * @param rules the rule and the overrides
     * @param muon   the Muon group's config, to check that Muon can take what is sent to it
     * @param adamW  the AdamW group's config
     * @param firstLr the lr of a parameter's first update by its optimizer and id, for the table
     * @return the assignment
     * @throws IllegalArgumentException if an override names a frozen parameter or a tied weight is forced to
     *                                  Muon, Muon cannot take a parameter sent to it, or no parameter requires
     *                                  grad
     * @throws IllegalStateException    if a parameter is not initialized
     */
    static ParameterAssignment classify(ModelParameters model, Rules rules, MuonConfig muon, AdamWConfig adamW,
                                        java.util.function.ToDoubleBiFunction<OptimizerKind, String> firstLr) {
        checkNames(model, rules);
        Map<String, ModelParameters.Entry> trainable = new LinkedHashMap<>();
        List<String> frozen = new ArrayList<>();
        String lastMatrix = null;
        for (ModelParameters.Entry e : model.entries()) {
            NDArray array = e.array();
            if (array.getShape().dimension() == 2) {
                lastMatrix = e.name();
            }
            if (e.parameter().requiresGradient()) {
                trainable.put(e.name(), e);
            } else {
                frozen.add(e.name());
            }
        }
        for (String name : rules.forceMuon()) {
            requireTrainable("forceMuon", name, frozen);
        }
        for (String name : rules.forceAdamW()) {
            requireTrainable("forceAdamW", name, frozen);
        }
        if (trainable.isEmpty()) {
            throw new IllegalArgumentException("the block must hold at least one parameter that requires grad, got "
                    + model.entries().size() + " parameters, " + frozen.size() + " frozen");
        }
        Map<String, String> firstName = new HashMap<>();
        Set<String> tied = new LinkedHashSet<>();
        for (ModelParameters.Entry e : trainable.values()) {
            String previous = firstName.putIfAbsent(e.id(), e.name());
            if (previous != null) {
                tied.add(previous);
                tied.add(e.name());
            }
        }
        List<ModelParameters.Entry> entries = new ArrayList<>(trainable.values());
        List<AssignmentRule.Verdict> verdicts = new ArrayList<>();
        List<AssignmentRule.Candidate> candidates = new ArrayList<>();
        for (ModelParameters.Entry e : entries) {
            String name = e.name();
            Shape shape = e.array().getShape();
            String canonical = firstName.get(e.id());
            AssignmentRule.Verdict v;
            if (!canonical.equals(name)) {
                v = new AssignmentRule.Verdict(OptimizerKind.ADAMW, AssignmentRule.Reason.TIED_ALIAS, canonical);
            } else {
                if (tied.contains(name) && rules.forceMuon().contains(name)) {
                    throw new IllegalArgumentException("parameter '" + name + "' is tied to another name and tied "
                            + "weights go to AdamW; remove it from forceMuon");
                }
                v = AssignmentRule.override(name, tied.contains(name), rules.forceMuon(), rules.forceAdamW())
                        .orElseGet(() -> rules.muonRule() != null
                                ? AssignmentRule.customRule(rules.muonRule().test(name, shape))
                                : AssignmentRule.defaultRule(e.ruleName(), shape.getShape()));
            }
            if (v.optimizer() == OptimizerKind.MUON) {
                String label = "parameter '" + name + "'";
                DjlSupport.requireSupported(e.array().getDataType(), label);
                AssignmentRule.matrixOf(shape.getShape(), muon, label);
            }
            verdicts.add(v);
            candidates.add(new AssignmentRule.Candidate(name, e.ruleName(), shape.dimension(), v.optimizer()));
        }
        if (rules.outputLayer() && rules.muonRule() == null) {
            AssignmentRule.outputLayer(candidates, lastMatrix, rules.forceMuon(), rules.forceAdamW()).ifPresent(
                    at -> verdicts.set(at, new AssignmentRule.Verdict(OptimizerKind.ADAMW,
                            AssignmentRule.Reason.OUTPUT_LAYER)));
        }
        List<Row> rows = new ArrayList<>();
        Set<String> aliases = new LinkedHashSet<>();
        Map<String, OptimizerKind> byId = new HashMap<>();
        for (int i = 0; i < entries.size(); i++) {
            ModelParameters.Entry e = entries.get(i);
            AssignmentRule.Verdict v = verdicts.get(i);
            long[] shape = e.array().getShape().getShape();
            double lr = firstLr.applyAsDouble(v.optimizer(), e.id());
            if (v.optimizer() == OptimizerKind.MUON) {
                AssignmentRule.Matrix m = AssignmentRule.matrixOf(shape, muon, e.name());
                lr = muon.withLr(lr).scaledLr(m.rows(), m.cols());
            } else {
                DjlSupport.requireSupported(e.array().getDataType(), "parameter '" + e.name() + "'");
            }
            rows.add(new Row(e.name(), shape, e.array().getDataType().toString(), v.optimizer(), v.text(), lr));
            if (byId.putIfAbsent(e.id(), v.optimizer()) != null) {
                aliases.add(e.name());
            }
        }
        return new ParameterAssignment(rows, frozen, aliases, byId);
    }

    private static void requireTrainable(String list, String name, List<String> frozen) {
        if (frozen.contains(name)) {
            throw new IllegalArgumentException(list + " names '" + name
                    + "', which does not require grad and is left out");
        }
    }

    /**
     * The optimizer of a parameter id.
     *
     * @param id the id DJL passes to {@code update}
     * @return the optimizer, or null for a parameter that was frozen or absent when the block was classified
     */
    OptimizerKind optimizerOf(String id) {
        return byId.get(id);
    }

    /**
     * Every trainable parameter, in the block's order, aliases of shared parameters included.
     *
     * @return the rows
     */
    public List<Row> rows() {
        return rows;
    }

    /**
     * The names left out because they do not require gradients.
     *
     * @return the frozen names
     */
    public List<String> frozen() {
        return frozen;
    }

    /**
     * The names of the parameters of one optimizer.
     *
     * @param optimizer which one
     * @return the names, in order; aliases of shared parameters excluded
     */
    public List<String> names(OptimizerKind optimizer) {
        List<String> out = new ArrayList<>();
        for (Row row : rows) {
            if (row.optimizer() == optimizer && !aliases.contains(row.name())) {
                out.add(row.name());
            }
        }
        return out;
    }

    /**
     * A fixed-width table: one line per parameter, then the counts.
     *
     * @return the table
     */
    @Override
    public String toString() {
        int nameWidth = "name".length();
        int shapeWidth = "shape".length();
        for (Row row : rows) {
            nameWidth = Math.max(nameWidth, row.name().length());
            shapeWidth = Math.max(shapeWidth, Arrays.toString(row.shape).length());
        }
        String format = "%-" + nameWidth + "s  %-" + shapeWidth + "s  %-8s  %-6s  %-10s  %s%n";
        StringBuilder out = new StringBuilder();
        out.append(String.format(Locale.ROOT, format, "name", "shape", "dtype", "opt", "lr", "why"));
        int muon = 0;
        for (Row row : rows) {
            if (row.optimizer() == OptimizerKind.MUON) {
                muon++;
            }
            out.append(String.format(Locale.ROOT, format, row.name(), Arrays.toString(row.shape), row.dtype(),
                    row.optimizer() == OptimizerKind.MUON ? "muon" : "adamw",
                    String.format(Locale.ROOT, "%.4g", row.lr()), row.reason()));
        }
        out.append(String.format(Locale.ROOT, "%d on Muon, %d on AdamW%n", muon, rows.size() - muon));
        if (!frozen.isEmpty()) {
            out.append("left out (requires grad false): ").append(String.join(", ", frozen)).append('\n');
        }
        return out.toString();
    }
}
