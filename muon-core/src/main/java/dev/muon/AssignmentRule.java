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
 * // v.optimizer() == OptimizerKind.ADAMW, v.reason() == Reason.EMBEDDING_OR_HEAD,
 * // v.text() == "embedding or head ('lm_head')"
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

    private AssignmentRule() {
    }

    /** Which rule or override decided where a parameter goes, with the text the assignment table shows. */
    public enum Reason {
        /** The default rule: a 2-D weight or 4-D conv filter that is neither an embedding nor a head. */
        HIDDEN_MATRIX("hidden matrix"),
        /** The default rule: a bias, a norm's gain, a scalar. */
        FEWER_THAN_2_DIMS("fewer than 2 dims"),
        /** The default rule: a stack of matrices, which needs stacked weights allowed to go to Muon. */
        STACKED_3D("3-D (force it to Muon with stacked weights allowed)"),
        /** The default rule: more than 4 dims (the detail is the count). */
        MORE_THAN_4_DIMS("-D"),
        /** The default rule: a module named as an embedding or head (the detail is the module). */
        EMBEDDING_OR_HEAD("embedding or head"),
        /** The default rule: a top-level module named as an output head (the detail is the module). */
        OUTPUT_HEAD("output head"),
        /** The output-layer rule: the last matrix of a model without a named head. */
        OUTPUT_LAYER("output layer (last matrix)"),
        /**
         * The output-layer rule's exception for a model with one matrix: the last matrix is the only one on Muon,
         * and moving it would leave Muon nothing to do, so it stays (a hidden matrix by the default rule).
         */
        ONLY_MATRIX("only matrix on Muon (the output-layer rule keeps it)"),
        /** A custom rule ({@code muonWhen}) placed it. */
        CUSTOM_RULE("muonWhen rule"),
        /** Named in {@code forceMuon}. */
        FORCE_MUON("forceMuon"),
        /** Named in {@code forceAdamW}. */
        FORCE_ADAMW("forceAdamW"),
        /** A tensor registered under several names: tied weights go to AdamW. */
        TIED_WEIGHTS("tied weights"),
        /** A later name of a tied weight, counted once under its first name (the detail). */
        TIED_ALIAS("tied to");

        static {
            TorchNatives.extract();
        }

        private final String text;

        Reason(String text) {
            this.text = text;
        }

        /**
         * The reason as the assignment table shows it.
         *
         * @param detail the module or dim count it names, or null
         * @return the text
         */
        public String text(String detail) {
            return text(detail, Binding.MUON_CORE);
        }

        /**
         * The reason as a binding's assignment table shows it: the settings it names ({@code forceMuon},
         * {@code forceAdamW}, {@code muonWhen}) as the binding spells them.
         *
         * @param detail  the module or dim count it names, or null
         * @param binding whose words to use
         * @return the text
         */
        public String text(String detail, Binding binding) {
            String own = switch (this) {
                case FORCE_MUON, FORCE_ADAMW -> binding.setting(text);
                case CUSTOM_RULE -> binding.setting("muonWhen") + " rule";
                default -> text;
            };
            if (detail == null) {
                return own;
            }
            return switch (this) {
                case MORE_THAN_4_DIMS -> detail + own;
                case TIED_ALIAS -> own + " '" + detail + "' (counted once)";
                default -> own + " ('" + detail + "')";
            };
        }
    }

    /**
     * Where one parameter goes, and why.
     *
     * @param optimizer the optimizer that updates it
     * @param reason    the rule or override that decided
     * @param detail    what the reason names (a module, a dim count), or null
     */
    public record Verdict(OptimizerKind optimizer, Reason reason, String detail) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Checks that the optimizer and the reason are set.
         *
         * @throws NullPointerException if one is null
         */
        public Verdict {
            java.util.Objects.requireNonNull(optimizer, "optimizer must not be null");
            java.util.Objects.requireNonNull(reason, "reason must not be null");
        }

        /**
         * A verdict whose reason names nothing.
         *
         * @param optimizer the optimizer that updates it
         * @param reason    the rule or override that decided
         */
        public Verdict(OptimizerKind optimizer, Reason reason) {
            this(optimizer, reason, null);
        }

        /**
         * The reason as the assignment table shows it, e.g. {@code embedding or head ('lm_head')}.
         *
         * @return the text
         */
        public String text() {
            return reason.text(detail);
        }

        /**
         * The reason as a binding's assignment table shows it ({@link Reason#text(String, Binding)}).
         *
         * @param binding whose words to use
         * @return the text
         */
        public String text(Binding binding) {
            return reason.text(detail, binding);
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
        return matrixOf(shape, config, label, false);
    }

    /**
     * How Muon sees a parameter of this shape under {@code config}, or why it cannot take it, where the binding
     * knows whether the parameter is a convolution's filter {@code [out, in, k...]}: a filter of 3 to 5 dims (a 1-D,
     * 2-D or 3-D convolution's) is flattened to {@code [out, in·k...]} as a 4-D one is; without that knowledge a
     * 4-D parameter is read as a filter and a 3-D one as a stack.
     *
     * @param shape      the parameter's shape
     * @param config     its Muon group's configuration ({@code convWeights} and {@code stackedWeights} decide)
     * @param label      how to name the parameter in a message, e.g. {@code parameter 'fc1.weight'}
     * @param convFilter whether the parameter is known to be a convolution's filter
     * @return the matrix view
     * @throws IllegalArgumentException if the shape is not 2-D and {@code config} does not allow it, naming the
     *                                  parameter, its shape and the setting that would allow it
     */
    public static Matrix matrixOf(long[] shape, MuonConfig config, String label, boolean convFilter) {
        String shapeText = java.util.Arrays.toString(shape);
        if (shape.length == 2) {
            return new Matrix(0, shape[0], shape[1]);
        }
        if (shape.length == 4 || (convFilter && shape.length >= 3 && shape.length <= 5)) {
            long flat = 1;
            for (int d = 1; d < shape.length; d++) {
                flat *= shape[d];
            }
            if (config.convWeights() != ConvWeights.FLATTEN) {
                throw new IllegalArgumentException("Muon only supports 2-D parameters; " + label
                        + " has shape " + shapeText + ". To flatten a " + shape.length + "-D conv filter to ["
                        + shape[0] + ", " + flat + "], use MuonConfig.withConvWeights(ConvWeights.FLATTEN)");
            }
            return new Matrix(0, shape[0], flat);
        }
        if (shape.length == 3) {
            if (config.stackedWeights() != StackedWeights.BATCH) {
                throw new IllegalArgumentException("Muon only supports 2-D parameters; " + label
                        + " has shape " + shapeText + ". To treat a 3-D parameter as a batch of " + shape[0]
                        + " matrices, use MuonConfig.withStackedWeights(StackedWeights.BATCH)");
            }
            return new Matrix(shape[0], shape[1], shape[2]);
        }
        throw new IllegalArgumentException("Muon only supports 2-D parameters; " + label
                + " has shape " + shapeText);
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
        return defaultVerdict(name, shape.length);
    }

    /**
     * The default rule's verdict where the binding knows whether the parameter is a convolution's filter: a filter
     * of 3 to 5 dims is a hidden matrix as a 4-D one is (see {@link #matrixOf(long[], MuonConfig, String, boolean)}),
     * unless its name is an embedding's or a head's.
     *
     * @param name       the parameter's dotted name
     * @param shape      its shape
     * @param convFilter whether it is known to be a convolution's filter
     * @return the verdict
     */
    public static Verdict defaultRule(String name, long[] shape, boolean convFilter) {
        return defaultVerdict(name, convFilter && shape.length >= 3 && shape.length <= 5 ? 4 : shape.length);
    }

    /**
     * The verdict of a custom rule, which decides alone.
     *
     * @param muon what the rule answered
     * @return the verdict
     */
    public static Verdict customRule(boolean muon) {
        return new Verdict(muon ? OptimizerKind.MUON : OptimizerKind.ADAMW, Reason.CUSTOM_RULE);
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
            return Optional.of(new Verdict(OptimizerKind.MUON, Reason.FORCE_MUON));
        }
        if (forceAdamW.contains(name)) {
            return Optional.of(new Verdict(OptimizerKind.ADAMW, Reason.FORCE_ADAMW));
        }
        if (tied) {
            return Optional.of(new Verdict(OptimizerKind.ADAMW, Reason.TIED_WEIGHTS));
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
        int at = outputLayerAt(trainable, lastMatrix, forceMuon, forceAdamW);
        return at >= 0 ? OptionalInt.of(at) : OptionalInt.empty();
    }

    /**
     * The one exception of the output-layer rule that the table names ({@link Reason#ONLY_MATRIX}): the last
     * matrix would move to AdamW but is the only matrix on Muon, so it stays.
     *
     * @param trainable  as for {@link #outputLayer}
     * @param lastMatrix as for {@link #outputLayer}
     * @param forceMuon  names sent to Muon whatever the rule says
     * @param forceAdamW names sent to AdamW whatever the rule says
     * @return the index in {@code trainable} of the matrix that stays, or empty
     */
    public static OptionalInt onlyMatrixKept(List<Candidate> trainable, String lastMatrix, Set<String> forceMuon,
                                             Set<String> forceAdamW) {
        int at = outputLayerAt(trainable, lastMatrix, forceMuon, forceAdamW);
        return at < -1 ? OptionalInt.of(-at - 2) : OptionalInt.empty();
    }

    /** The index that moves; -1 for none, {@code -2 - index} when only the one-matrix exception keeps it. */
    private static int outputLayerAt(List<Candidate> trainable, String lastMatrix, Set<String> forceMuon,
                                     Set<String> forceAdamW) {
        int at = -1;
        int onMuon = 0;
        for (int i = 0; i < trainable.size(); i++) {
            Candidate c = trainable.get(i);
            if (c.name().equals(lastMatrix)) {
                at = i;
            } else if (c.dims() == 2 && (isHead(c.ruleName()) || forceAdamW.contains(c.name()))) {
                return -1;
            }
            if (c.optimizer() == OptimizerKind.MUON) {
                onMuon++;
            }
        }
        if (at < 0) {
            return -1;
        }
        Candidate c = trainable.get(at);
        if (c.optimizer() != OptimizerKind.MUON || forceMuon.contains(c.name())) {
            return -1;
        }
        return onMuon == 1 ? -2 - at : at;
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

    /** The default rule's verdict on a parameter of this name and number of dims. */
    static Verdict defaultVerdict(String name, long dims) {
        if (dims < 2) {
            return new Verdict(OptimizerKind.ADAMW, Reason.FEWER_THAN_2_DIMS);
        }
        if (dims == 3) {
            return new Verdict(OptimizerKind.ADAMW, Reason.STACKED_3D);
        }
        if (dims > 4) {
            return new Verdict(OptimizerKind.ADAMW, Reason.MORE_THAN_4_DIMS, Long.toString(dims));
        }
        String[] parts = name.split("\\.");
        int modules = parts.length > 1 ? parts.length - 1 : 1;
        for (int i = 0; i < modules; i++) {
            String part = parts[i].toLowerCase(Locale.ROOT);
            if (part.contains("embed") || EMBEDDING_OR_HEAD_ANYWHERE.contains(part)) {
                return new Verdict(OptimizerKind.ADAMW, Reason.EMBEDDING_OR_HEAD, parts[i]);
            }
        }
        if (HEAD_AT_TOP.contains(parts[0].toLowerCase(Locale.ROOT))) {
            return new Verdict(OptimizerKind.ADAMW, Reason.OUTPUT_HEAD, parts[0]);
        }
        return new Verdict(OptimizerKind.MUON, Reason.HIDDEN_MATRIX);
    }
}
