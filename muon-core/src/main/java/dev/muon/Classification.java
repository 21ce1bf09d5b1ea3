package dev.muon;

import dev.muon.internal.TorchNatives;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Predicate;

/**
 * Where each parameter of a hybrid optimizer goes and why, decided over what the parameters are and never over a
 * tensor: names (as the override lists name them), dotted names (as the name rules read them), shapes, dtypes,
 * whether they take gradients, which of them are one tensor under several names, and their registration order. It
 * is the one driver both modules run: muon-core's {@link Assignment} describes libtorch tensors to it, muon-djl's
 * {@code ParameterAssignment} DJL's parameters, and each gets the same decisions and the same refusals, worded with
 * its own setting names ({@link Binding}).
 *
 * <p>In order: the override lists are checked (a name in both, a name that is no parameter or is frozen); frozen
 * parameters are left out; a tensor under several names is counted once, under its first name, on AdamW (forcing a
 * tied name to Muon is refused); then for each parameter the overrides ({@code forceMuon}, {@code forceAdamW}), tying,
 * then the custom rule or the default rule decide ({@link AssignmentRule}); every parameter sent to Muon must be a
 * shape Muon takes under the group's config (and pass the binding's own check of its dtype), and a refusal names the
 * setting or rule that sent it there; last, with the default rule, the output-layer rule moves the last matrix to
 * AdamW ({@link AssignmentRule#outputLayer}), and a one-matrix model's matrix is labelled as kept
 * ({@link AssignmentRule.Reason#ONLY_MATRIX}).
 *
 * <pre>{@code
 * Classification c = Classification.of(List.of(
 *         new Classification.Parameter("fc1.weight", new long[] {64, 784}, "float32", true, 1L),
 *         new Classification.Parameter("fc2.weight", new long[] {10, 64}, "float32", true, 2L)),
 *         Classification.Rules.defaults(), MuonConfig.defaults(), Binding.MUON_CORE, (p, label) -> { });
 * c.names(OptimizerKind.MUON);   // [fc1.weight]: fc2.weight is the output layer
 * }</pre>
 */
public final class Classification {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * One parameter as the rules see it.
     *
     * @param name       its name, as the override lists and messages name it
     * @param ruleName   its dotted name, which the name rules read (the name itself where names are dotted)
     * @param shape      its shape
     * @param dtype      its dtype's name ({@code float32}, ...), for the table
     * @param trainable  whether it takes gradients; frozen ones are left out
     * @param identity   what is equal for every name of one tensor (tied weights); compared with {@code equals}
     * @param convFilter whether the binding knows it to be a convolution's filter {@code [out, in, k...]}
     */
    public record Parameter(String name, String ruleName, long[] shape, String dtype, boolean trainable,
                            Object identity, boolean convFilter) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Validates and copies the shape.
         *
         * @throws NullPointerException if a reference is null
         */
        public Parameter {
            Objects.requireNonNull(name, "name must not be null");
            Objects.requireNonNull(ruleName, "ruleName must not be null");
            Objects.requireNonNull(dtype, "dtype must not be null");
            Objects.requireNonNull(identity, "identity must not be null");
            shape = shape.clone();
        }

        /**
         * A parameter whose name is its dotted name and whose kind the binding does not know.
         *
         * @param name      its dotted name
         * @param shape     its shape
         * @param dtype     its dtype's name
         * @param trainable whether it takes gradients
         * @param identity  equal for every name of one tensor
         */
        public Parameter(String name, long[] shape, String dtype, boolean trainable, Object identity) {
            this(name, name, shape, dtype, trainable, identity, false);
        }

        /**
         * The shape.
         *
         * @return a copy
         */
        @Override
        public long[] shape() {
            return shape.clone();
        }

        /** The number of dims, without a copy. */
        int dims() {
            return shape.length;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Parameter p && name.equals(p.name) && ruleName.equals(p.ruleName)
                    && Arrays.equals(shape, p.shape) && dtype.equals(p.dtype) && trainable == p.trainable
                    && identity.equals(p.identity) && convFilter == p.convFilter;
        }

        @Override
        public int hashCode() {
            return Objects.hash(name, ruleName, Arrays.hashCode(shape), dtype, trainable, identity, convFilter);
        }

        @Override
        public String toString() {
            return "'" + name + "' " + Arrays.toString(shape) + " " + dtype + (trainable ? "" : " frozen");
        }
    }

    /**
     * What a builder collected about where parameters go.
     *
     * @param customRule  a rule that replaces the default one (and the output-layer rule), or null for the default
     * @param forceMuon   names sent to Muon whatever the rule says, in the order given
     * @param forceAdamW  names sent to AdamW whatever the rule says, in the order given
     * @param outputLayer whether the last matrix goes to AdamW (with the default rule only)
     * @param namedLists  further settings that name trainable parameters, by muon-core's setting name (such as
     *                    {@code orthogonalityErrorFor}), checked as the override lists are
     */
    public record Rules(Predicate<Parameter> customRule, Set<String> forceMuon, Set<String> forceAdamW,
                        boolean outputLayer, Map<String, Set<String>> namedLists) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Copies the lists, keeping their order.
         *
         * @throws NullPointerException if a list is null
         */
        public Rules {
            forceMuon = java.util.Collections.unmodifiableSet(new LinkedHashSet<>(forceMuon));
            forceAdamW = java.util.Collections.unmodifiableSet(new LinkedHashSet<>(forceAdamW));
            Map<String, Set<String>> lists = new LinkedHashMap<>();
            namedLists.forEach((k, v) -> lists.put(k, java.util.Collections.unmodifiableSet(new LinkedHashSet<>(v))));
            namedLists = java.util.Collections.unmodifiableMap(lists);
        }

        /**
         * The default rule, no override, the output-layer rule on.
         *
         * @return the rules
         */
        public static Rules defaults() {
            return new Rules(null, Set.of(), Set.of(), true, Map.of());
        }
    }

    /**
     * One parameter's decision.
     *
     * @param parameter the parameter
     * @param verdict   where it goes and why
     * @param aliasOf   the first name of its tensor when this name is a later alias of a tied weight, else null
     */
    public record Decision(Parameter parameter, AssignmentRule.Verdict verdict, String aliasOf) {
        static {
            // First, in case this is the first type of ours a program touches: see TorchNatives.
            TorchNatives.extract();
        }

        /**
         * Whether this name is a later alias of a tied weight (its state is its first name's).
         *
         * @return true for an alias
         */
        public boolean isAlias() {
            return aliasOf != null;
        }

        /**
         * The optimizer that updates it.
         *
         * @return the verdict's optimizer
         */
        public OptimizerKind optimizer() {
            return verdict.optimizer();
        }

        /**
         * The parameter's name.
         *
         * @return the name
         */
        public String name() {
            return parameter.name();
        }
    }

    /**
     * A binding's own check of a parameter sent to Muon (its dtype, its memory layout): throws
     * {@link IllegalArgumentException} naming {@code label}, the rule and the value.
     */
    @FunctionalInterface
    public interface MuonCheck extends BiConsumer<Parameter, String> {
    }

    private final List<Decision> decisions;
    private final List<String> frozen;

    private Classification(List<Decision> decisions, List<String> frozen) {
        this.decisions = List.copyOf(decisions);
        this.frozen = List.copyOf(frozen);
    }

    /**
     * Checks what can be checked from names alone, before the parameters have shapes (DJL creates them when the
     * trainer is initialized): the override lists against the parameters' names.
     *
     * @param parameters the parameters' names and whether each takes gradients, in registration order
     * @param rules      the overrides
     * @param binding    whose words the messages use
     * @throws IllegalArgumentException if a name is in both override lists, or a list names a parameter that does
     *                                  not exist or is frozen
     */
    public static void checkNames(Map<String, Boolean> parameters, Rules rules, Binding binding) {
        for (String name : rules.forceMuon()) {
            if (rules.forceAdamW().contains(name)) {
                throw new IllegalArgumentException("parameter '" + name + "' is in both "
                        + binding.setting("forceMuon") + " and " + binding.setting("forceAdamW")
                        + "; name it in one list only");
            }
        }
        List<String> trainable = new ArrayList<>();
        Set<String> frozenNames = new LinkedHashSet<>();
        parameters.forEach((name, takesGrad) -> {
            if (takesGrad) {
                trainable.add(name);
            } else {
                frozenNames.add(name);
            }
        });
        Map<String, Set<String>> lists = new LinkedHashMap<>();
        lists.put("forceMuon", rules.forceMuon());
        lists.put("forceAdamW", rules.forceAdamW());
        lists.putAll(rules.namedLists());
        Set<String> known = new java.util.HashSet<>(trainable);
        lists.forEach((list, names) -> {
            for (String name : names) {
                if (frozenNames.contains(name)) {
                    throw new IllegalArgumentException(binding.setting(list) + " names '" + name
                            + "', which does not require grad and is left out");
                }
                if (!known.contains(name)) {
                    throw new IllegalArgumentException(binding.setting(list) + " names '" + name + "', which is not "
                            + "a parameter; parameters are " + trainable);
                }
            }
        });
    }

    /**
     * Classifies parameters.
     *
     * @param parameters every parameter, frozen ones included, in registration order (a tied tensor once per name)
     * @param rules      the rule and the overrides
     * @param muon       the Muon group's config: what Muon can take ({@code convWeights}, {@code stackedWeights})
     * @param binding    whose words the messages use
     * @param muonCheck  the binding's own check of a parameter sent to Muon (dtype, layout), run before the shape
     *                   check; its refusal, as the shape check's, gets the name of what sent the parameter to Muon
     * @return the decisions
     * @throws IllegalArgumentException if a name is in both override lists, an override names no trainable
     *                                  parameter, no parameter takes gradients, a tied weight is forced to Muon, or
     *                                  Muon cannot take a parameter sent to it
     */
    public static Classification of(List<Parameter> parameters, Rules rules, MuonConfig muon, Binding binding,
                                    MuonCheck muonCheck) {
        Map<String, Boolean> names = new LinkedHashMap<>();
        parameters.forEach(p -> names.put(p.name(), p.trainable()));
        checkNames(names, rules, binding);
        List<Parameter> trainable = new ArrayList<>();
        List<String> frozen = new ArrayList<>();
        for (Parameter p : parameters) {
            if (p.trainable()) {
                trainable.add(p);
            } else {
                frozen.add(p.name());
            }
        }
        if (trainable.isEmpty()) {
            throw new IllegalArgumentException(binding.source() + " must hold at least one parameter that requires "
                    + "grad, got " + parameters.size() + " parameters, " + frozen.size() + " frozen");
        }
        Map<Object, String> firstName = new HashMap<>();
        Set<String> tied = new LinkedHashSet<>();
        for (Parameter p : trainable) {
            String previous = firstName.putIfAbsent(p.identity(), p.name());
            if (previous != null) {
                tied.add(previous);
                tied.add(p.name());
            }
        }
        List<Decision> decisions = new ArrayList<>();
        for (Parameter p : trainable) {
            String name = p.name();
            if (tied.contains(name) && rules.forceMuon().contains(name)) {
                throw new IllegalArgumentException("parameter '" + name + "' is tied to another name and tied "
                        + "weights go to AdamW; remove it from " + binding.setting("forceMuon"));
            }
            Decision d = decide(p, firstName.get(p.identity()), tied.contains(name), rules);
            if (d.optimizer() == OptimizerKind.MUON) {
                requireMuonTakes(p, d.verdict(), muon, binding, muonCheck);
            }
            decisions.add(d);
        }
        if (rules.outputLayer() && rules.customRule() == null) {
            applyOutputLayer(parameters, decisions, rules);
        }
        return new Classification(decisions, frozen);
    }

    /** One parameter's decision: alias, overrides, tying, then the rule, in that order of precedence. */
    private static Decision decide(Parameter p, String canonical, boolean tied, Rules rules) {
        if (!canonical.equals(p.name())) {
            return new Decision(p, new AssignmentRule.Verdict(OptimizerKind.ADAMW, AssignmentRule.Reason.TIED_ALIAS,
                    canonical), canonical);
        }
        AssignmentRule.Verdict v = AssignmentRule.override(p.name(), tied, rules.forceMuon(), rules.forceAdamW())
                .orElseGet(() -> rules.customRule() != null
                        ? AssignmentRule.customRule(rules.customRule().test(p))
                        : AssignmentRule.defaultRule(p.ruleName(), p.shape, p.convFilter()));
        return new Decision(p, v, null);
    }

    /**
     * The binding's check and Muon's shape rule for a parameter sent to Muon; a refusal says what sent it there.
     */
    private static void requireMuonTakes(Parameter p, AssignmentRule.Verdict verdict, MuonConfig muon,
                                         Binding binding, MuonCheck muonCheck) {
        String label = "parameter '" + p.name() + "'";
        try {
            muonCheck.accept(p, label);
            AssignmentRule.matrixOf(p.shape, muon, label, p.convFilter());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage() + " (" + sentToMuonBy(p.name(), verdict, binding) + ")",
                    e);
        }
    }

    /** What sent a parameter to Muon, and how to keep it off, in the binding's words. */
    static String sentToMuonBy(String name, AssignmentRule.Verdict verdict, Binding binding) {
        return switch (verdict.reason()) {
            case FORCE_MUON -> "sent to Muon by " + binding.setting("forceMuon");
            case CUSTOM_RULE -> "sent to Muon by the " + binding.setting("muonWhen") + " rule";
            default -> "sent to Muon by the default rule as a " + verdict.text(binding) + "; "
                    + binding.setting("forceAdamW") + "(\"" + name + "\") keeps it on AdamW";
        };
    }

    /**
     * Sends the last 2-D parameter in registration order to AdamW, unless one of {@link AssignmentRule#outputLayer}'s
     * exceptions holds, and labels a one-matrix model's matrix as kept. Frozen parameters count for "last": a frozen
     * head leaves the hidden matrices alone.
     */
    private static void applyOutputLayer(List<Parameter> parameters, List<Decision> decisions, Rules rules) {
        String last = null;
        for (Parameter p : parameters) {
            if (p.dims() == 2) {
                last = p.name();
            }
        }
        List<AssignmentRule.Candidate> candidates = new ArrayList<>();
        for (Decision d : decisions) {
            candidates.add(new AssignmentRule.Candidate(d.name(), d.parameter().ruleName(), d.parameter().dims(),
                    d.optimizer()));
        }
        AssignmentRule.outputLayer(candidates, last, rules.forceMuon(), rules.forceAdamW()).ifPresent(at ->
                decisions.set(at, new Decision(decisions.get(at).parameter(), new AssignmentRule.Verdict(
                        OptimizerKind.ADAMW, AssignmentRule.Reason.OUTPUT_LAYER), null)));
        AssignmentRule.onlyMatrixKept(candidates, last, rules.forceMuon(), rules.forceAdamW()).ifPresent(at -> {
            Decision d = decisions.get(at);
            if (d.verdict().reason() == AssignmentRule.Reason.HIDDEN_MATRIX) {
                decisions.set(at, new Decision(d.parameter(), new AssignmentRule.Verdict(OptimizerKind.MUON,
                        AssignmentRule.Reason.ONLY_MATRIX), null));
            }
        });
    }

    /**
     * Refuses a classification that sends nothing to Muon, unless that was asked for.
     *
     * @param muonNames      the names on Muon
     * @param allowEmptyMuon whether AdamW alone was asked for ({@code allowEmptyMuon(true)})
     * @param binding        whose words the message uses
     * @param table          the assignment table, for the message
     * @throws IllegalArgumentException if no parameter is on Muon and {@code allowEmptyMuon} is false
     */
    public static void requireMuon(List<String> muonNames, boolean allowEmptyMuon, Binding binding, String table) {
        if (allowEmptyMuon || !muonNames.isEmpty()) {
            return;
        }
        throw new IllegalArgumentException("no parameter was assigned to Muon, so this would train with AdamW "
                + "alone. Muon takes 2-D and 4-D weights whose names do not look like an embedding or a head; "
                + "check the names below, send parameters with " + binding.setting("forceMuon") + "(..) or "
                + binding.setting("muonWhen") + "(..), or call " + binding.setting("allowEmptyMuon")
                + "(true) if AdamW alone is intended.\n" + table);
    }

    /**
     * Every trainable parameter's decision, in registration order, aliases of tied weights included.
     *
     * @return the decisions
     */
    public List<Decision> decisions() {
        return decisions;
    }

    /**
     * The names left out because they take no gradients.
     *
     * @return the frozen names, in registration order
     */
    public List<String> frozen() {
        return frozen;
    }

    /**
     * The names of one optimizer's parameters.
     *
     * @param optimizer which one
     * @return the names, in order; later aliases of tied weights excluded
     */
    public List<String> names(OptimizerKind optimizer) {
        List<String> out = new ArrayList<>();
        for (Decision d : decisions) {
            if (!d.isAlias() && d.optimizer() == optimizer) {
                out.add(d.name());
            }
        }
        return out;
    }
}
