package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiPredicate;

/**
 * Resolves the {@link RowSplit} rules a builder collected (by tensor or name, and by predicate) into one rule per
 * Muon parameter, and checks them: a parameter named twice must be given one rule, a name must be a Muon
 * parameter, and the blocks must cover its rows. Explicit names win over predicates; among predicates the first
 * added wins.
 */
final class RowSplitRules {
    private RowSplitRules() {
    }

    /**
     * The rules given by tensor, by the tensor's identity.
     *
     * @throws IllegalArgumentException if one tensor is given two different rules
     */
    static Map<Long, RowSplit> byIdentity(List<Map.Entry<Tensor, RowSplit>> given) {
        Map<Long, RowSplit> rules = new LinkedHashMap<>();
        for (Map.Entry<Tensor, RowSplit> e : given) {
            RowSplit previous = rules.putIfAbsent(ParameterState.identityOf(e.getKey()), e.getValue());
            if (previous != null && !previous.equals(e.getValue())) {
                throw new IllegalArgumentException("rowSplit names the tensor of shape "
                        + Arrays.toString(e.getKey().shape()) + " twice, with " + previous + " and " + e.getValue()
                        + "; give one rule per parameter");
            }
        }
        return rules;
    }

    /** The shapes of the tensors given, by identity: what a build that does not find one of them names. */
    static Map<Long, String> shapesByIdentity(List<Map.Entry<Tensor, RowSplit>> given) {
        Map<Long, String> shapes = new LinkedHashMap<>();
        for (Map.Entry<Tensor, RowSplit> e : given) {
            shapes.putIfAbsent(ParameterState.identityOf(e.getKey()), Arrays.toString(e.getKey().shape()));
        }
        return shapes;
    }

    /**
     * One rule per Muon parameter of an assignment that has one, by name, each checked against the parameter's
     * matrix shape under {@code muon}.
     *
     * @param assignment the classified parameters
     * @param byName     the rules given by name, in order
     * @param byRule     the rules given by predicate, in order
     * @param muon       the Muon group's config (how a parameter is seen as a matrix)
     * @return the rules, in table order
     * @throws IllegalArgumentException if a name is given two different rules, names no trainable parameter or
     *                                  one on AdamW, or a rule's blocks do not cover its parameter's rows
     */
    static Map<String, RowSplit> resolve(Assignment assignment, List<Map.Entry<String, RowSplit>> byName,
                                         List<Map.Entry<BiPredicate<String, Tensor>, RowSplit>> byRule,
                                         MuonConfig muon) {
        Map<String, RowSplit> named = new LinkedHashMap<>();
        for (Map.Entry<String, RowSplit> e : byName) {
            RowSplit previous = named.putIfAbsent(e.getKey(), e.getValue());
            if (previous != null && !previous.equals(e.getValue())) {
                throw new IllegalArgumentException("rowSplit names '" + e.getKey() + "' twice, with " + previous
                        + " and " + e.getValue() + "; give one rule per parameter");
            }
        }
        List<String> names = new ArrayList<>();
        for (Assignment.Decision d : assignment.decisions()) {
            names.add(d.name());
        }
        for (String name : named.keySet()) {
            if (assignment.frozen().contains(name)) {
                throw new IllegalArgumentException("rowSplit names '" + name
                        + "', which does not require grad and is left out");
            }
            if (!names.contains(name)) {
                throw new IllegalArgumentException("rowSplit names '" + name + "', which is not a parameter; "
                        + "parameters are " + names);
            }
            for (Assignment.Decision d : assignment.decisions()) {
                if (d.name().equals(name) && (d.kind() != OptimizerKind.MUON || d.isAlias())) {
                    throw new IllegalArgumentException("rowSplit names '" + name + "', which is on AdamW; only "
                            + "Muon parameters are orthogonalized");
                }
            }
        }
        Map<String, RowSplit> resolved = new LinkedHashMap<>();
        for (Assignment.Decision d : assignment.decisions()) {
            if (d.kind() != OptimizerKind.MUON || d.isAlias()) {
                continue;
            }
            RowSplit split = named.get(d.name());
            for (int r = 0; split == null && r < byRule.size(); r++) {
                if (byRule.get(r).getKey().test(d.name(), d.tensor())) {
                    split = byRule.get(r).getValue();
                }
            }
            if (split != null) {
                String label = "parameter '" + d.name() + "'";
                new RowBlocks(split, MatrixLayout.of(d.tensor(), muon, label), label);
                resolved.put(d.name(), split);
            }
        }
        return resolved;
    }
}
