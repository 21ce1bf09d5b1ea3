package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Which optimizer of a {@link MuonAdamW} updates each named parameter, and why: a table that prints well
 * ({@link #toString()}).
 *
 * <p>The default rule ({@link #defaultMuonRule()}) sends a parameter to Muon when it is a hidden weight matrix:
 * <ol>
 *   <li>it has 2 dims, or 4 (a conv filter {@code [out, in, kh, kw]}, which Muon flattens to
 *       {@code [out, in·kh·kw]});</li>
 *   <li>and its name does not look like an embedding or an output head: no module in the name contains
 *       {@code embed} or is one of {@code wte}, {@code wpe}, {@code tok_emb}, {@code pos_emb}, {@code lm_head},
 *       {@code classifier}; and the top-level module is not {@code output}, {@code out}, {@code head},
 *       {@code heads}, {@code fc}, {@code fc_out}, {@code proj_out}, {@code logits}, {@code score} or
 *       {@code classifier}. Most head names count only at the top level because the same names are hidden layers
 *       when nested: BERT's {@code attention.output.dense}, GPT-J's {@code mlp.fc_out}, the {@code proj_out} of
 *       diffusion models' attention blocks; a top-level {@code output} is Llama's head, {@code fc} ResNet's and
 *       {@code score} that of a sequence classifier.</li>
 * </ol>
 * Everything else goes to AdamW: biases, norm gains and scalars (fewer than 2 dims), 3-D tensors, embeddings, the
 * head. A tensor registered under two names (tied weights) is counted once, under its first name, on AdamW.
 *
 * <p><b>The output layer.</b> Names miss many heads ({@code fc3}, the last {@code Linear} of a
 * {@code Sequential}), and every Muon reference keeps the output layer on AdamW. So, on top of the default rule,
 * the last 2-D parameter in registration order goes to AdamW as "output layer (last matrix)", unless:
 * <ul>
 *   <li>it is on AdamW already (a head or embedding by name, {@code forceAdamW}, tied to an embedding);</li>
 *   <li>it is named in {@code forceMuon};</li>
 *   <li>the model has a head elsewhere: another 2-D parameter whose name is a head's, or a 2-D parameter named in
 *       {@code forceAdamW} (then the last matrix is a hidden one registered after the head);</li>
 *   <li>it does not require grad (a frozen head; the last trainable matrix is then a hidden one);</li>
 *   <li>it is the only matrix on Muon (a one-matrix model would leave Muon nothing to do);</li>
 *   <li>a custom rule ({@code muonWhen}) is in place, which decides alone, or the builder turned the rule off
 *       ({@code outputLayerOnAdamW(false)}).</li>
 * </ul>
 * 4-D conv filters never count as the last matrix: a CNN's classifier is a 2-D {@code fc}.
 * {@link MuonAdamW.Builder} can replace the rule by a predicate and force names either way. The rules themselves,
 * over names and shapes alone, are {@link AssignmentRule}'s, which muon-djl applies too.
 *
 * <pre>{@code
 * MuonAdamW opt = MuonAdamW.builder(model.named_parameters()).build();
 * System.out.println(opt.assignment());
 * }</pre>
 */
public final class Assignment {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private static final String NO_DECAY = "; no weight decay";

    /**
     * One parameter's row.
     *
     * @param name      the parameter's name
     * @param shape     its shape
     * @param dtype     its dtype's name
     * @param optimizer the optimizer that updates it
     * @param reason    why (the rule or override that decided)
     * @param lr        the lr its update uses now: Muon's lr times the shape ratio and extra scale, or AdamW's lr
     *                  (for a parameter orthogonalized in row blocks, its first block's; see {@link RowSplit})
     * @param stateBytes the optimizer state it holds: one buffer on Muon, two moments on AdamW, 0 for an alias
     */
    public record Row(String name, long[] shape, String dtype, OptimizerKind optimizer, String reason, double lr,
                      long stateBytes) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

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
     * One classification: a name, the optimizer's own handle on its tensor, where it goes and why;
     * {@code aliasOf} is the first name of a tied weight when this name is a later alias of it (its verdict is
     * then the weight's), else null.
     */
    record Decision(String name, Tensor tensor, AssignmentRule.Verdict verdict, String aliasOf) {
        boolean isAlias() {
            return aliasOf != null;
        }

        OptimizerKind kind() {
            return verdict.optimizer();
        }

        /** The reason as the table shows it. */
        String reason() {
            return verdict.text();
        }
    }

    /**
     * What a {@link MuonAdamW.Builder} collected about where parameters go.
     *
     * @param muonRule           the predicate that sends a parameter to Muon
     * @param customRule         whether {@code muonRule} replaced the default rule (the table then says so)
     * @param forceMuon          names sent to Muon whatever the rule says
     * @param forceAdamW         names sent to AdamW whatever the rule says
     * @param orthogonalityNames names whose orthogonality error is measured; must be Muon parameters
     * @param outputLayer        whether the last matrix goes to AdamW (see the class comment)
     * @param noDecayBelow2D     whether AdamW parameters with fewer than 2 dims form a group without weight decay
     */
    record Rules(BiPredicate<String, Tensor> muonRule, boolean customRule, Set<String> forceMuon,
                 Set<String> forceAdamW, Set<String> orthogonalityNames, boolean outputLayer,
                 boolean noDecayBelow2D) {
    }

    private final List<Decision> decisions;
    private final List<Row> rows;
    private final List<String> frozen;
    private final long adamWOnlyStateBytes;
    private final boolean noDecayBelow2D;
    /** The {@link RowSplit} of each Muon parameter that has one, by name. */
    private final Map<String, RowSplit> rowSplits;

    /** The table of {@code decisions} at the lrs of the given configs. */
    private Assignment(List<Decision> decisions, List<String> frozen, boolean noDecayBelow2D, MuonConfig muon,
                       AdamWConfig adamW) {
        this(decisions, frozen, noDecayBelow2D, muon, adamW, Map.of());
    }

    /** The table of {@code decisions}, with row splits, at the lrs of the given configs. */
    private Assignment(List<Decision> decisions, List<String> frozen, boolean noDecayBelow2D, MuonConfig muon,
                       AdamWConfig adamW, Map<String, RowSplit> rowSplits) {
        this.rowSplits = Map.copyOf(rowSplits);
        this.decisions = List.copyOf(decisions);
        this.frozen = List.copyOf(frozen);
        this.noDecayBelow2D = noDecayBelow2D;
        List<Row> table = new ArrayList<>();
        long adamWOnly = 0;
        for (Decision d : decisions) {
            long[] shape = d.tensor.shape();
            long bytes = d.tensor.numel() * d.tensor.element_size();
            String dtype = d.tensor.scalar_type().toString();
            if (d.isAlias()) {
                table.add(new Row(d.name, shape, dtype, OptimizerKind.ADAMW, d.reason(), adamW.lr(), 0));
                continue;
            }
            adamWOnly += 2 * bytes;
            if (d.kind() == OptimizerKind.MUON) {
                MatrixLayout layout = MatrixLayout.of(d.tensor, muon, d.name);
                RowSplit split = rowSplits.get(d.name);
                if (split != null) {
                    table.add(splitRow(d, shape, dtype, ParameterState.declaredBytes(UpdateRecipe.of(muon).buffers(),
                            d.tensor), split, layout, muon));
                    continue;
                }
                table.add(new Row(d.name, shape, dtype, OptimizerKind.MUON, d.reason(),
                        muon.scaledLr(layout.rows(), layout.cols()),
                        ParameterState.declaredBytes(UpdateRecipe.of(muon).buffers(), d.tensor)));
            } else {
                String why = decayed(d) ? d.reason() : d.reason() + NO_DECAY;
                table.add(new Row(d.name, shape, dtype, OptimizerKind.ADAMW, why, adamW.lr(), 2 * bytes));
            }
        }
        this.rows = List.copyOf(table);
        this.adamWOnlyStateBytes = adamWOnly;
    }

    /**
     * The row of a parameter orthogonalized in row blocks: its lr is the first block's, and the reason names the
     * rule and, where the blocks' shapes give different lrs, each block's.
     */
    private static Row splitRow(Decision d, long[] shape, String dtype, long bytes, RowSplit split,
                                MatrixLayout layout, MuonConfig muon) {
        double[] lrs = new RowBlocks(split, layout, d.name).scaledLrs(muon);
        StringBuilder why = new StringBuilder(d.reason()).append("; NS per row block ").append(split);
        boolean differ = false;
        for (double lr : lrs) {
            differ |= lr != lrs[0];
        }
        if (differ) {
            why.append(", lr per block");
            for (int k = 0; k < lrs.length; k++) {
                why.append(k == 0 ? " " : ", ").append(String.format(Locale.ROOT, "%.4g", lrs[k]));
            }
        }
        return new Row(d.name, shape, dtype, OptimizerKind.MUON, why.toString(), lrs[0], bytes);
    }

    /**
     * Classifies named parameters with the driver both modules share ({@link Classification}): which require grad,
     * which are tied aliases, and where each goes and why. Takes the optimizer's own handle on every trainable
     * tensor, so that a {@code PointerScope} of the caller cannot free it.
     *
     * @param named the parameters by name, in the model's order
     * @param rules the rule and the overrides
     * @param muon  the Muon group's config, to check that Muon can take what is sent to it
     * @param adamW the AdamW group's config, for the table's lrs
     * @return the assignment
     * @throws IllegalArgumentException if a name is in both override lists, an override or an orthogonality name
     *                                  names no trainable parameter (or one on AdamW), a tied weight is forced to
     *                                  Muon, Muon cannot take a parameter sent to it, or no parameter requires grad
     */
    static Assignment classify(Map<String, Tensor> named, Rules rules, MuonConfig muon, AdamWConfig adamW) {
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        List<Classification.Parameter> parameters = new ArrayList<>();
        for (Map.Entry<String, Tensor> e : named.entrySet()) {
            Tensor t = e.getValue();
            if (t == null || !t.defined()) {
                throw new IllegalArgumentException("parameter '" + e.getKey() + "' is null or undefined");
            }
            parameters.add(new Classification.Parameter(e.getKey(), t.shape(), dev.muon.state.ParameterSpec.dtypeName(t.scalar_type()),
                    t.requires_grad(), ParameterState.identityOf(t)));
            tensors.put(e.getKey(), t);
        }
        Classification classification = Classification.of(parameters, new Classification.Rules(
                rules.customRule() ? p -> rules.muonRule().test(p.name(), tensors.get(p.name())) : null,
                rules.forceMuon(), rules.forceAdamW(), rules.outputLayer(),
                Map.of("orthogonalityErrorFor", rules.orthogonalityNames())), muon, Binding.MUON_CORE,
                // Muon's own check of the tensor (dtype, layout), with the parameter's name in the message.
                (p, label) -> MatrixLayout.of(tensors.get(p.name()), muon, label));
        List<Decision> decisions = new ArrayList<>();
        for (Classification.Decision d : classification.decisions()) {
            Tensor handle = NativeLifetime.outliveScope(new Tensor(tensors.get(d.name())));
            decisions.add(new Decision(d.name(), handle, d.verdict(), d.aliasOf()));
        }
        for (String name : rules.orthogonalityNames()) {
            for (Decision d : decisions) {
                if (d.name.equals(name) && d.kind() != OptimizerKind.MUON) {
                    throw new IllegalArgumentException("orthogonalityErrorFor names '" + name
                            + "', which is on AdamW; only Muon parameters are orthogonalized");
                }
            }
        }
        return new Assignment(decisions, classification.frozen(), rules.noDecayBelow2D(), muon, adamW);
    }

    /** Whether AdamW decays this parameter: always, unless the no-decay group is on and it has fewer than 2 dims. */
    private boolean decayed(Decision d) {
        return !noDecayBelow2D || d.tensor.dim() >= 2;
    }

    /**
     * Refuses an assignment with nothing on Muon, unless that was asked for ({@link Classification#requireMuon}).
     *
     * @param allowEmptyMuon whether AdamW alone was asked for
     * @throws IllegalArgumentException if no parameter is on Muon and {@code allowEmptyMuon} is false
     */
    void requireMuon(boolean allowEmptyMuon) {
        Classification.requireMuon(names(OptimizerKind.MUON), allowEmptyMuon, Binding.MUON_CORE, toString());
    }

    /**
     * The same decisions at the lrs of other configs.
     *
     * @param muon  the Muon group's current config
     * @param adamW the AdamW group's current config
     * @return the table at those lrs
     */
    Assignment at(MuonConfig muon, AdamWConfig adamW) {
        return new Assignment(decisions, frozen, noDecayBelow2D, muon, adamW, rowSplits);
    }

    /**
     * The same decisions with row splits, at the lrs of the given configs.
     *
     * @param splits the rule of each Muon parameter that has one, by name (checked by {@code RowSplitRules})
     * @param muon   the Muon group's config
     * @param adamW  the AdamW group's config
     * @return the assignment with the splits
     */
    Assignment withRowSplits(Map<String, RowSplit> splits, MuonConfig muon, AdamWConfig adamW) {
        return new Assignment(decisions, frozen, noDecayBelow2D, muon, adamW, splits);
    }

    /**
     * The row split of a Muon parameter.
     *
     * @param name the parameter's name
     * @return its rule, or null when it is orthogonalized whole
     */
    RowSplit rowSplit(String name) {
        return rowSplits.get(name);
    }

    /** Every decision in the order given, aliases included. */
    List<Decision> decisions() {
        return decisions;
    }

    /**
     * The optimizer's handles on the tensors of one optimizer, aliases excluded, in table order.
     *
     * @param optimizer which one
     * @return the tensors
     */
    List<Tensor> tensors(OptimizerKind optimizer) {
        return select(d -> d.kind() == optimizer, d -> d.tensor);
    }

    /**
     * The optimizer's handles on the AdamW tensors of one weight-decay group, aliases excluded, in table order.
     *
     * @param decayedGroup true for the parameters AdamW decays, false for those it does not (empty unless the
     *                     no-decay group is on)
     * @return the tensors
     */
    List<Tensor> adamWTensors(boolean decayedGroup) {
        return select(d -> d.kind() == OptimizerKind.ADAMW && decayed(d) == decayedGroup, d -> d.tensor);
    }

    /**
     * The names of {@link #adamWTensors(boolean)}, in the same order.
     *
     * @param decayedGroup which group
     * @return the names
     */
    List<String> adamWNames(boolean decayedGroup) {
        return select(d -> d.kind() == OptimizerKind.ADAMW && decayed(d) == decayedGroup, d -> d.name);
    }

    /** {@code what} of every decision that is not an alias and satisfies {@code which}, in table order. */
    private <T> List<T> select(Predicate<Decision> which, Function<Decision, T> what) {
        List<T> out = new ArrayList<>();
        for (Decision d : decisions) {
            if (!d.isAlias() && which.test(d)) {
                out.add(what.apply(d));
            }
        }
        return out;
    }

    /** Whether AdamW's parameters with fewer than 2 dims form a group without weight decay. */
    boolean noDecayBelow2D() {
        return noDecayBelow2D;
    }

    /**
     * One line per named parameter, aliases included: kind, name, shape, dtype, for a tied alias, why, and, for a
     * parameter orthogonalized in row blocks only, its {@link RowSplit}. A checkpoint stores it and a load compares
     * it field by field; without row splits its form is that of format version 1.
     *
     * @return the layout text
     */
    String layoutText() {
        StringBuilder text = new StringBuilder();
        for (Decision d : decisions) {
            text.append(d.isAlias() ? OptimizerKind.ADAMW : d.kind()).append('\t').append(d.name).append('\t')
                    .append(Arrays.toString(d.tensor.shape())).append('\t').append(d.tensor.scalar_type())
                    .append('\t').append(d.isAlias() ? d.reason() : "");
            if (rowSplits.containsKey(d.name) && !d.isAlias()) {
                // A sixth field only where a rule is set: files without one read as "no split".
                text.append('\t').append(rowSplits.get(d.name));
            }
            text.append('\n');
        }
        return text.toString();
    }

    /**
     * The default rule: true for a hidden weight matrix (see the class comment and {@link AssignmentRule}).
     *
     * @return a predicate on (name, tensor) that is true for parameters that go to Muon
     */
    public static BiPredicate<String, Tensor> defaultMuonRule() {
        return (name, tensor) -> defaultVerdict(name, tensor.dim()).optimizer() == OptimizerKind.MUON;
    }

    /** The default rule's verdict on a parameter of this name and number of dims. */
    static AssignmentRule.Verdict defaultVerdict(String name, long dims) {
        return AssignmentRule.defaultVerdict(name, dims);
    }

    /**
     * Every trainable parameter, in the order given.
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
     * @return the names, in order; aliases of tied weights excluded
     */
    public List<String> names(OptimizerKind optimizer) {
        return select(d -> d.kind() == optimizer, d -> d.name);
    }

    /**
     * The optimizer state this assignment holds, in bytes (tensor data only).
     *
     * @return the sum of the rows' state bytes
     */
    public long stateBytes() {
        long sum = 0;
        for (Row row : rows) {
            sum += row.stateBytes;
        }
        return sum;
    }

    /**
     * The state libtorch's {@code AdamW} alone would hold for the same parameters: two moments of each distinct
     * tensor, in its dtype.
     *
     * @return bytes
     */
    public long adamWOnlyStateBytes() {
        return adamWOnlyStateBytes;
    }

    /**
     * A fixed-width table: one line per parameter, then totals ({@link AssignmentTable}, as muon-djl prints it).
     *
     * @return the table
     */
    @Override
    public String toString() {
        List<AssignmentTable.Row> lines = new ArrayList<>();
        for (Row row : rows) {
            lines.add(new AssignmentTable.Row(row.name, row.shape, row.dtype, row.optimizer, row.reason, row.lr,
                    row.stateBytes));
        }
        return AssignmentTable.render(lines, frozen, Binding.MUON_CORE, adamWOnlyStateBytes, List.of());
    }
}
