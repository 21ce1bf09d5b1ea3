package dev.muon.djl;

import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.AssignmentRule;
import dev.muon.AssignmentTable;
import dev.muon.Classification;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.UpdateRecipe;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Function;
import java.util.function.ToDoubleBiFunction;

/**
 * Which optimizer of a {@link MuonAdamW} updates each parameter of the block, and why: a table that prints well
 * ({@link #toString()}), and that the optimizer logs when it classifies the block.
 *
 * <p>The classification is muon-core's own ({@link Classification}: the driver, the rules of
 * {@link AssignmentRule}, the output-layer rule, the messages), which muon-core's {@code Assignment} runs on libtorch
 * tensors; this class describes DJL's parameters to it and prints the table muon-core prints
 * ({@link AssignmentTable}), in DJL's words ({@code DjlSupport.BINDING}: {@code optForceMuon}, ...). DJL's names are read
 * as dotted names ({@code 01SequentialBlock_03Linear_weight} is {@code SequentialBlock.Linear.weight}): hidden
 * matrices (2-D, 4-D conv filters, and the filters of DJL's {@code Conv1d} and {@code Conv3d}, flattened) go to Muon;
 * biases, norm gains, embeddings (any block whose name contains {@code embed}, such as DJL's
 * {@code TrainableWordEmbedding}), heads by name and the output layer (the last 2-D parameter) go to AdamW. A
 * parameter shared by two blocks is counted once, under its first name, on AdamW. The overrides name parameters as
 * {@code block.getParameters()} does.
 *
 * <pre>{@code
 * System.out.println(optimizer.assignment());
 * }</pre>
 */
public final class ParameterAssignment {
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
        /** The shared driver's rules, the custom one reading DJL's name and shape. */
        Classification.Rules shared() {
            return new Classification.Rules(muonRule == null ? null
                    : p -> muonRule.test(p.name(), new Shape(p.shape())), forceMuon, forceAdamW, outputLayer,
                    Map.of());
        }
    }

    private final List<AssignmentTable.Row> rows;
    private final List<String> frozen;
    /** The later names of shared parameters, each with its first name. */
    private final Map<String, String> aliases;
    /** The optimizer of each parameter id (an alias's id is its first name's). */
    private final Map<String, OptimizerKind> byId;
    /** The matrix view of each Muon parameter id. */
    private final Map<String, AssignmentRule.Matrix> matrices;
    private final long adamWOnlyBytes;
    private final List<String> notes;

    private ParameterAssignment(List<AssignmentTable.Row> rows, List<String> frozen, Map<String, String> aliases,
                                Map<String, OptimizerKind> byId, Map<String, AssignmentRule.Matrix> matrices,
                                long adamWOnlyBytes, List<String> notes) {
        this.rows = List.copyOf(rows);
        this.frozen = List.copyOf(frozen);
        this.aliases = Map.copyOf(aliases);
        this.byId = Map.copyOf(byId);
        this.matrices = Map.copyOf(matrices);
        this.adamWOnlyBytes = adamWOnlyBytes;
        this.notes = List.copyOf(notes);
    }

    /**
     * Checks the names of the override lists against the block, which has them before it is initialized.
     *
     * @param model the block's parameters
     * @param rules the overrides
     * @throws IllegalArgumentException if a name is in both lists, names no parameter or a frozen one
     */
    static void checkNames(ModelParameters model, Rules rules) {
        Map<String, Boolean> names = new LinkedHashMap<>();
        model.entries().forEach(e -> names.putIfAbsent(e.name(), e.parameter().requiresGradient()));
        Classification.checkNames(names, rules.shared(), DjlSupport.BINDING);
    }

    /**
     * Classifies the parameters of a block whose parameters have shapes (DJL sets them when it initializes the
     * block), with muon-core's driver.
     *
     * @param model   the block's parameters
     * @param rules   the rule and the overrides
     * @param muon    the Muon group's config, to check that Muon can take what is sent to it
     * @param dtypeOf each parameter's dtype
     * @param firstLr the lr of a parameter's first update by its optimizer and id, for the table
     * @return the assignment
     * @throws IllegalArgumentException as {@link Classification#of} does, and for a dtype muon-djl does not update
     * @throws IllegalStateException    if a parameter has no shape yet
     */
    static ParameterAssignment classify(ModelParameters model, Rules rules, MuonConfig muon,
                                        Function<ModelParameters.Entry, DataType> dtypeOf,
                                        ToDoubleBiFunction<OptimizerKind, String> firstLr) {
        List<Classification.Parameter> parameters = new ArrayList<>();
        Map<String, ModelParameters.Entry> byName = new HashMap<>();
        for (ModelParameters.Entry e : model.entries()) {
            parameters.add(new Classification.Parameter(e.name(), e.ruleName(), e.shape(),
                    dtypeOf.apply(e).toString(), e.parameter().requiresGradient(), e.id(), e.convFilter()));
            byName.put(e.name(), e);
        }
        Classification classification = Classification.of(parameters, rules.shared(), muon, DjlSupport.BINDING,
                (p, label) -> DjlSupport.requireSupported(dtypeOf.apply(byName.get(p.name())), label));
        List<AssignmentTable.Row> rows = new ArrayList<>();
        Map<String, String> aliases = new LinkedHashMap<>();
        Map<String, OptimizerKind> byId = new HashMap<>();
        Map<String, AssignmentRule.Matrix> matrices = new HashMap<>();
        List<dev.muon.BufferSpec> buffers = UpdateRecipe.of(muon).buffers();
        long adamWOnly = 0;
        for (Classification.Decision d : classification.decisions()) {
            ModelParameters.Entry e = byName.get(d.name());
            long[] shape = d.parameter().shape();
            DataType dtype = dtypeOf.apply(e);
            long bytes = AssignmentTable.elements(shape) * dtype.getNumOfBytes();
            double lr = firstLr.applyAsDouble(d.optimizer(), e.id());
            long state;
            if (d.isAlias()) {
                aliases.put(d.name(), d.aliasOf());
                state = 0;
            } else if (d.optimizer() == OptimizerKind.MUON) {
                AssignmentRule.Matrix m = AssignmentRule.matrixOf(shape, muon, d.name(), e.convFilter());
                matrices.put(e.id(), m);
                lr = muon.withLr(lr).scaledLr(m.rows(), m.cols());
                long[] rowShape = m.batch() == 0 ? new long[] {m.rows()} : new long[] {m.batch(), m.rows()};
                state = AssignmentTable.muonStateBytes(buffers, shape, rowShape, dtype.toString());
            } else {
                DjlSupport.requireSupported(dtype, "AdamW", "parameter '" + d.name() + "'");
                state = 2 * bytes;
            }
            if (!d.isAlias()) {
                adamWOnly += 2 * bytes;
            }
            byId.putIfAbsent(e.id(), d.optimizer());
            rows.add(new AssignmentTable.Row(d.name(), shape, dtype.toString(), d.optimizer(),
                    d.verdict().text(DjlSupport.BINDING), lr, state));
        }
        return new ParameterAssignment(rows, classification.frozen(), aliases, byId, matrices, adamWOnly, List.of());
    }

    /**
     * This table with notes of the binding below it (which kernels run Newton–Schulz, say).
     *
     * @param lines the notes
     * @return a copy
     */
    ParameterAssignment withNotes(List<String> lines) {
        return new ParameterAssignment(rows, frozen, aliases, byId, matrices, adamWOnlyBytes, lines);
    }

    /**
     * Refuses a table with nothing on Muon unless AdamW alone was asked for ({@link Classification#requireMuon}).
     *
     * @param allowEmptyMuon {@code optAllowEmptyMuon}
     * @throws IllegalArgumentException if nothing is on Muon and that was not asked for
     */
    void requireMuon(boolean allowEmptyMuon) {
        Classification.requireMuon(names(OptimizerKind.MUON), allowEmptyMuon, DjlSupport.BINDING, toString());
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
     * The first name of a shared parameter's later name.
     *
     * @param name a row's name
     * @return the first name, or null when {@code name} is not a later name of a shared parameter
     */
    String aliasOf(String name) {
        return aliases.get(name);
    }

    /**
     * The matrix view of a Muon parameter.
     *
     * @param id its id
     * @return the view, or null for a parameter not on Muon
     */
    AssignmentRule.Matrix matrixOf(String id) {
        return matrices.get(id);
    }

    /**
     * Every trainable parameter, in the block's order, aliases of shared parameters included.
     *
     * @return the rows
     */
    public List<AssignmentTable.Row> rows() {
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
        for (AssignmentTable.Row row : rows) {
            if (row.optimizer() == optimizer && !aliases.containsKey(row.name())) {
                out.add(row.name());
            }
        }
        return out;
    }

    /**
     * The optimizer state this assignment holds, in bytes (one copy per device).
     *
     * @return the sum of the rows' state bytes
     */
    public long stateBytes() {
        return rows.stream().mapToLong(AssignmentTable.Row::stateBytes).sum();
    }

    /**
     * The fixed-width table muon-core prints ({@link AssignmentTable}): one line per parameter, the counts and the
     * state against AdamW alone, the parameters left out (wrapped), then the notes.
     *
     * @return the table
     */
    @Override
    public String toString() {
        return AssignmentTable.render(rows, frozen, DjlSupport.BINDING, adamWOnlyBytes, notes);
    }
}
