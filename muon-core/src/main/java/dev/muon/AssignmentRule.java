package dev.muon;

import dev.muon.internal.TorchNatives;

import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * The rules that send a named parameter to Muon or to AdamW, over its name and shape alone: the default rule, the
 * precedence of the overrides and the output-layer rule that {@link Assignment}'s class comment states, and the
 * shapes Muon accepts ({@link #matrixOf}). They hold no tensor, so that a module without libtorch's bindings
 * (muon-djl) applies the very same rules, with the same messages, to its own parameters; {@link Assignment} and
 * {@code MatrixLayout} apply them to libtorch tensors.
 *
 * <p>Names are dotted module paths as PyTorch writes them ({@code layers.0.mlp.fc1.weight}): every part but the
 * last is a module, the last is the parameter.
 *
 * <pre>{@code
 * AssignmentRule.Verdict v = AssignmentRule.defaultRule("lm_head.weight", new long[] {50257, 768});
 * // v.optimizer() == OptimizerKind.ADAMW, v.reason() == "embedding or head ('lm_head')"
 * }</pre>
 */
public final class AssignmentRule {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private static final Set<String> EMBEDDING_OR_HEAD_ANYWHERE =
            Set.of("wte", "wpe", "tok_emb", "pos_emb", "lm_head", "classifier");
    private static final Set<String> HEAD_ANYWHERE = Set.of("lm_head", "classifier");
    private static final Set<String> HEAD_AT_TOP = Set.of("output", "out", "head", "heads", "fc", "fc_out",
            "proj_out", "logits", "score", "classifier");

    /** The reason of a parameter that the default rule sends to Muon. */
    public static final String HIDDEN_MATRIX = "hidden matrix";
    /** The reason of the output-layer rule. */
    public static final String OUTPUT_LAYER = "output layer (last matrix)";
    /** The reason of a parameter that a custom rule placed. */
    public static final String CUSTOM_RULE = "muonWhen rule";

    private AssignmentRule() {
    }

    /**
     * Where one parameter goes, and why.
     *
     * @param optimizer the optimizer that updates it
     * @param reason    the rule or override that decided, as the assignment table shows it
     */
    public record Verdict(OptimizerKind optimizer, String reason) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Checks that both fields are set.
         *
         * @throws NullPointerException if a field is null
         */
        public Verdict {
            java.util.Objects.requireNonNull(optimizer, "optimizer");
            java.util.Objects.requireNonNull(reason, "reason");
        }
    }

    /**
     * One trainable parameter as the output-layer rule sees it.
     *
     * @param name      its name, as the override lists name it
     * @param ruleName  its dotted name, which the head check reads (the name itself where names are dotted)
     * @param dims      its number of dimensions
     * @param optimizer where the other rules sent it (a later alias of a tied weight counts as AdamW)
     */
    public record Candidate(String name, String ruleName, int dims, OptimizerKind optimizer) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * A candidate whose name is its dotted name.
         *
         * @param name      its dotted name
         * @param dims      its number of dimensions
         * @param optimizer where the other rules sent it
         */
        public Candidate(String name, int dims, OptimizerKind optimizer) {
            this(name, name, dims, optimizer);
        }
    }

    /**
     * The matrix, or batch of matrices, that Muon sees in a parameter: a 2-D weight as itself, a 4-D conv filter
     * {@code [out, in, kh, kw]} as {@code [out, in·kh·kw]}, a 3-D stack {@code [n, rows, cols]} as a batch of
     * {@code n}.
     *
     * @param batch the number of stacked matrices, 0 for a single matrix
     * @param rows  the rows of each matrix
     * @param cols  the columns of each matrix
     */
    public record Matrix(long batch, long rows, long cols) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

    }

    /**
     * How Muon sees a parameter of this shape under {@code config}, or why it cannot take it.
     *
     * @param shape  the parameter's shape
     * @param config its Muon group's configuration ({@code convWeights} and {@code stackedWeights} decide)
     * @param label  how to name the parameter in a message, e.g. {@code parameter 'fc1.weight'}
     * @return the matrix view
     * @throws IllegalArgumentException if the shape is not 2-D and {@code config} does not allow it, naming the
     *                                  parameter, its shape and the setting that would allow it
     */
    public static Matrix matrixOf(long[] shape, MuonConfig config, String label) {
        String shapeText = java.util.Arrays.toString(shape);
        switch (shape.length) {
            case 2:
                return new Matrix(0, shape[0], shape[1]);
            case 4:
                long flat = shape[1] * shape[2] * shape[3];
                if (config.convWeights() != ConvWeights.FLATTEN) {
                    throw new IllegalArgumentException("Muon only supports 2-D parameters; " + label
                            + " has shape " + shapeText + ". To flatten a 4-D conv filter to [" + shape[0] + ", "
                            + flat + "], use MuonConfig.withConvWeights(ConvWeights.FLATTEN)");
                }
                return new Matrix(0, shape[0], flat);
            case 3:
                if (config.stackedWeights() != StackedWeights.BATCH) {
                    throw new IllegalArgumentException("Muon only supports 2-D parameters; " + label
                            + " has shape " + shapeText + ". To treat a 3-D parameter as a batch of " + shape[0]
                            + " matrices, use MuonConfig.withStackedWeights(StackedWeights.BATCH)");
                }
                return new Matrix(shape[0], shape[1], shape[2]);
            default:
                throw new IllegalArgumentException("Muon only supports 2-D parameters; " + label
                        + " has shape " + shapeText);
        }
    }

    /**
     * The default rule's verdict: Muon for a hidden weight matrix (2 dims, or 4 for a conv filter) whose name is
     * not an embedding's or a head's, AdamW with the reason otherwise.
     *
     * @param name  the parameter's dotted name
     * @param shape its shape
     * @return the verdict
     */
    public static Verdict defaultRule(String name, long[] shape) {
        String why = reason(name, shape.length);
        return why == null ? new Verdict(OptimizerKind.MUON, HIDDEN_MATRIX) : new Verdict(OptimizerKind.ADAMW, why);
    }

    /**
     * The verdict of a custom rule, which decides alone.
     *
     * @param muon what the rule answered
     * @return the verdict
     */
    public static Verdict customRule(boolean muon) {
        return new Verdict(muon ? OptimizerKind.MUON : OptimizerKind.ADAMW, CUSTOM_RULE);
    }

    /**
     * The verdict of the overrides and of tying, which win over any rule, in this order: {@code forceMuon},
     * {@code forceAdamW}, then tied weights (which go to AdamW).
     *
     * @param name       the parameter's name (the first name of a tied weight)
     * @param tied       whether the parameter is registered under more than one name
     * @param forceMuon  names sent to Muon whatever the rule says
     * @param forceAdamW names sent to AdamW whatever the rule says
     * @return the verdict, or empty when the rule decides
     */
    public static Optional<Verdict> override(String name, boolean tied, Set<String> forceMuon,
                                             Set<String> forceAdamW) {
        if (forceMuon.contains(name)) {
            return Optional.of(new Verdict(OptimizerKind.MUON, "forceMuon"));
        }
        if (forceAdamW.contains(name)) {
            return Optional.of(new Verdict(OptimizerKind.ADAMW, "forceAdamW"));
        }
        if (tied) {
            return Optional.of(new Verdict(OptimizerKind.ADAMW, "tied weights"));
        }
        return Optional.empty();
    }

    /**
     * Which parameter the output-layer rule moves to AdamW: the last 2-D parameter in registration order, unless
     * it is on AdamW already, is named in {@code forceMuon}, is not trainable, is the only matrix on Muon, or the
     * model has a head elsewhere (another 2-D parameter with a head's name, or a 2-D one named in
     * {@code forceAdamW}). The caller applies the rule only with the default rule in place.
     *
     * @param trainable  the trainable parameters in registration order, aliases of tied weights included, with
     *                   the verdicts of the other rules
     * @param lastMatrix the name of the last 2-D parameter in registration order, trainable or not, or null
     * @param forceMuon  names sent to Muon whatever the rule says
     * @param forceAdamW names sent to AdamW whatever the rule says
     * @return the index in {@code trainable} of the parameter to move, or empty
     */
    public static OptionalInt outputLayer(List<Candidate> trainable, String lastMatrix, Set<String> forceMuon,
                                          Set<String> forceAdamW) {
        int at = -1;
        int onMuon = 0;
        for (int i = 0; i < trainable.size(); i++) {
            Candidate c = trainable.get(i);
            if (c.name().equals(lastMatrix)) {
                at = i;
            } else if (c.dims() == 2 && (isHead(c.ruleName()) || forceAdamW.contains(c.name()))) {
                return OptionalInt.empty();
            }
            if (c.optimizer() == OptimizerKind.MUON) {
                onMuon++;
            }
        }
        if (at < 0) {
            return OptionalInt.empty();
        }
        Candidate c = trainable.get(at);
        if (c.optimizer() != OptimizerKind.MUON || forceMuon.contains(c.name()) || onMuon == 1) {
            return OptionalInt.empty();
        }
        return OptionalInt.of(at);
    }

    /**
     * Whether a module of the name is a head's, by the default rule's name lists: {@code lm_head} or
     * {@code classifier} anywhere, or a head's name at the top level.
     *
     * @param name the parameter's dotted name
     * @return true for a head
     */
    public static boolean isHead(String name) {
        String[] parts = name.split("\\.");
        for (int i = 0; i < Math.max(1, parts.length - 1); i++) {
            if (HEAD_ANYWHERE.contains(parts[i].toLowerCase(Locale.ROOT))) {
                return true;
            }
        }
        return HEAD_AT_TOP.contains(parts[0].toLowerCase(Locale.ROOT));
    }

    /** Null when the default rule sends the parameter to Muon, else why it goes to AdamW. */
    static String reason(String name, long dims) {
        if (dims < 2) {
            return "fewer than 2 dims";
        }
        if (dims == 3) {
            return "3-D (force it to Muon with stacked weights allowed)";
        }
        if (dims > 4) {
            return dims + "-D";
        }
        String[] parts = name.split("\\.");
        int modules = parts.length > 1 ? parts.length - 1 : 1;
        for (int i = 0; i < modules; i++) {
            String part = parts[i].toLowerCase(Locale.ROOT);
            if (part.contains("embed") || EMBEDDING_OR_HEAD_ANYWHERE.contains(part)) {
                return "embedding or head ('" + parts[i] + "')";
            }
        }
        if (HEAD_AT_TOP.contains(parts[0].toLowerCase(Locale.ROOT))) {
            return "output head ('" + parts[0] + "')";
        }
        return null;
    }
}
