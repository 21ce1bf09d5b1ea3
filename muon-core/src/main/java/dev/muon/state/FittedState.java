package dev.muon.state;

import dev.muon.OptimizerKind;
import dev.muon.internal.Messages;
import dev.muon.internal.TorchNatives;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * A state as an optimizer can restore it, under {@link AssignmentChanges}: the state itself when it fits
 * ({@link StateFit}); under {@link AssignmentChanges#START_FRESH}, the state rewritten onto the optimizer's own
 * entries, where every parameter whose place changed keeps at most its value and starts its optimizer state
 * afresh. {@link #fresh()} names those parameters, for the optimizer's log.
 *
 * @param state the state to restore: it fits the optimizer
 * @param fresh each parameter that starts afresh, with why ({@code 'fc1.weight' (MUON in the state, now ADAMW)}),
 *              empty when the state fitted as it was
 */
public record FittedState(OptimizerState state, List<String> fresh) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * The fields of {@link StateFit}'s differences that a moved, new or untied parameter explains. A row split
     * alone is a setting of the run, not a move: its refusal names the split, as it did.
     */
    private static final Set<String> ASSIGNMENT_FIELDS = Set.of("count", "presence", "name", "optimizer", "group",
            "tied to");

    /**
     * Copies.
     *
     * @throws NullPointerException if an argument is null
     */
    public FittedState {
        Objects.requireNonNull(state, "state must not be null");
        fresh = List.copyOf(fresh);
    }

    /**
     * Fits {@code candidate} to an optimizer whose own state (without tensors) is {@code optimizer}.
     *
     * @param optimizer the optimizer's own state (its tensors are not used)
     * @param candidate the state to restore (with or without tensors: a file's description fits alike)
     * @param changes   what to do with parameters whose place changed
     * @param source    what the state came from, for the message ("checkpoint /x/run.ckpt")
     * @param hints     adds the optimizer's advice to a difference (identity for none)
     * @return the state to restore
     * @throws StateMismatchException listing every difference that remains; under {@link AssignmentChanges#REFUSE}
     *                                its message says how to continue when a changed assignment explains them
     */
    public static FittedState of(OptimizerState optimizer, OptimizerState candidate, AssignmentChanges changes,
                                 String source, UnaryOperator<StateMismatchException.Difference> hints) {
        Objects.requireNonNull(changes, "changes must not be null");
        if (changes == AssignmentChanges.START_FRESH && sameParts(optimizer, candidate)) {
            FittedState fitted = startFresh(optimizer, candidate, source, hints);
            StateFit.require(optimizer, fitted.state(), source, hints);
            return fitted;
        }
        List<StateMismatchException.Difference> found = StateFit.differences(optimizer, candidate).stream()
                .map(hints).toList();
        if (!found.isEmpty()) {
            // A builder hint (the output-layer rule, say) is the better way on; the advice is for the rest.
            boolean reassigned = found.stream().anyMatch(d -> ASSIGNMENT_FIELDS.contains(d.field())
                    && d.hint() == null);
            throw new StateMismatchException(source, found, reassigned
                    && changes == AssignmentChanges.REFUSE ? "If parameters moved between Muon and AdamW, "
                    + "appeared, or a tied weight was split, restore with AssignmentChanges.START_FRESH (load(path, "
                    + "AssignmentChanges.START_FRESH) or restore(state, AssignmentChanges.START_FRESH)) to restore "
                    + "the rest and start those parameters afresh (docs/checkpoints.md)" : null);
        }
        return new FittedState(candidate, List.of());
    }

    /**
     * Whether the two have the same Muon groups and AdamW part: only then can the entries be rewritten (a Muon
     * entry's group must exist, an AdamW entry needs an AdamW part); otherwise {@link StateFit} names the
     * difference.
     */
    private static boolean sameParts(OptimizerState optimizer, OptimizerState candidate) {
        return optimizer.muonConfigs().size() == candidate.muonConfigs().size()
                && (optimizer.adamWConfig() == null) == (candidate.adamWConfig() == null);
    }

    /**
     * The candidate on the optimizer's entries: an unchanged entry as the candidate has it, a moved one with its
     * value only, a new one with nothing; refuses names the optimizer lacks and other shapes or dtypes.
     */
    private static FittedState startFresh(OptimizerState optimizer, OptimizerState candidate, String source,
                                          UnaryOperator<StateMismatchException.Difference> hints) {
        Map<String, ParameterEntry> saved = new LinkedHashMap<>();
        candidate.entries().forEach(e -> saved.put(e.name(), e));
        List<StateMismatchException.Difference> refused = new ArrayList<>();
        List<ParameterEntry> entries = new ArrayList<>();
        List<String> fresh = new ArrayList<>();
        for (ParameterSpec mine : optimizer.specs()) {
            ParameterEntry theirs = saved.remove(mine.name());
            String where = "'" + mine.name() + "'";
            if (theirs == null) {
                entries.add(ParameterEntry.of(mine));
                fresh.add(where + " (not in the state)");
                continue;
            }
            ParameterSpec spec = theirs.spec();
            if (!Arrays.equals(spec.shape(), mine.shape())) {
                refused.add(StateMismatchException.Difference.of(mine.name(), null, "shape",
                        Arrays.toString(mine.shape()), Arrays.toString(spec.shape()), null));
                continue;
            }
            if (spec.dtype().value != mine.dtype().value) {
                refused.add(StateMismatchException.Difference.of(mine.name(), null, "dtype",
                        mine.dtype().toString(), spec.dtype().toString(), null));
                continue;
            }
            if (spec.equals(mine)) {
                entries.add(theirs);
                continue;
            }
            ParameterEntry entry = ParameterEntry.of(mine);
            if (!mine.isTied() && theirs.value() != null) {
                entry = entry.withValue(theirs.value());
            }
            entries.add(entry);
            fresh.add(where + " (" + placeOf(spec) + " in the state, now " + placeOf(mine) + ")");
        }
        for (ParameterEntry left : saved.values()) {
            refused.add(StateMismatchException.Difference.of(left.name(), null, "presence", "absent", "present",
                    "a restore with AssignmentChanges.START_FRESH drops no parameter of the state"));
        }
        if (!refused.isEmpty()) {
            throw new StateMismatchException(source, refused.stream().map(hints).toList());
        }
        return new FittedState(new OptimizerState(candidate.step(), candidate.muonConfigs(),
                candidate.adamWConfig(), entries, candidate.schedule()), fresh);
    }

    /**
     * The line an optimizer logs after restoring a state under {@link AssignmentChanges#START_FRESH}: every
     * parameter that started afresh, and why.
     *
     * @param optimizer the optimizer's name ({@code "MuonAdamW"})
     * @param source    what the state came from ("checkpoint /x/run.ckpt")
     * @return e.g. {@code MuonAdamW: restored checkpoint /x/run.ckpt with AssignmentChanges.START_FRESH; 1
     *         parameter starts afresh (no optimizer state): 'fc1.weight' (MUON in the state, now ADAMW)}
     */
    public String logLine(String optimizer, String source) {
        return optimizer + ": restored " + source + " with AssignmentChanges.START_FRESH; " + fresh.size()
                + (fresh.size() == 1 ? " parameter starts" : " parameters start") + " afresh (no optimizer state): "
                + String.join(", ", fresh);
    }

    /** Where a parameter is: {@code MUON}, {@code ADAMW group 1}, {@code tied to 'wte.weight'}, with its split. */
    private static String placeOf(ParameterSpec spec) {
        if (spec.isTied()) {
            return "tied to '" + Messages.shortened(spec.tiedTo()) + "'";
        }
        String place = spec.optimizer().name() + (spec.group() == 0 ? "" : " group " + spec.group());
        return spec.optimizer() == OptimizerKind.MUON && spec.rowSplit() != null ? place + " " + spec.rowSplit()
                : place;
    }
}
