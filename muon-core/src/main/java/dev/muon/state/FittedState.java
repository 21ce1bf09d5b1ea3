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
        List<StateMismatchException.Difference> regrouped = regrouped(optimizer, candidate);
        if (!regrouped.isEmpty()) {
            throw new StateMismatchException(source, regrouped);
        }
        if (changes == AssignmentChanges.START_FRESH && sameParts(optimizer, candidate)) {
            FittedState fitted = startFresh(optimizer, candidate, source, hints);
            StateFit.require(optimizer, fitted.state(), source, hints);
            return fitted;
        }
        List<StateMismatchException.Difference> found = StateFit.differences(optimizer, candidate).stream()
                .map(hints).toList();
        if (!found.isEmpty()) {
            // A builder hint (the output-layer rule, say) is the better way on; the advice is for the rest.
            boolean reassigned = found.stream().anyMatch(d -> d.field().assignment()
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
     * The groups of a {@code Muon} whose sizes changed while the number of parameters did not: a parameter moved
     * between groups. A {@code Muon}'s parameters are known by their place only ({@code "parameter i of group g"}),
     * so the state cannot say which parameter moved, and matching the rest by place would give one parameter
     * another's momentum: such a state is refused under every {@link AssignmentChanges}, naming the groups.
     * Empty when either side has named parameters (a {@code MuonAdamW}'s) or the sizes agree.
     */
    private static List<StateMismatchException.Difference> regrouped(OptimizerState optimizer,
                                                                      OptimizerState candidate) {
        int groups = optimizer.muonConfigs().size();
        if (candidate.muonConfigs().size() != groups || optimizer.specs().size() != candidate.specs().size()
                || !placeNamed(optimizer) || !placeNamed(candidate)) {
            return List.of();
        }
        int[] mine = groupSizes(optimizer, groups);
        int[] theirs = groupSizes(candidate, groups);
        if (Arrays.equals(mine, theirs)) {
            return List.of();
        }
        List<StateMismatchException.Difference> found = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            if (mine[g] != theirs[g]) {
                found.add(new StateMismatchException.Difference("muon group " + g,
                        StateMismatchException.Field.PARAMETERS,
                        String.valueOf(mine[g]), String.valueOf(theirs[g]), null));
            }
        }
        int last = found.size() - 1;
        found.set(last, found.get(last).withHint("parameters moved between the groups of this Muon; its "
                + "parameters are known by their place only ('parameter i of group g'), so the state cannot say "
                + "which one moved, and AssignmentChanges.START_FRESH cannot restore it either: build the Muon with "
                + "the groups as saved (" + sizes(theirs) + ") to load this state, or leave the state unloaded "
                + "to start every parameter afresh"));
        return found;
    }

    /** Whether every entry is a Muon entry named by its place, as an unnamed {@code Muon} names them. */
    private static boolean placeNamed(OptimizerState state) {
        if (state.adamWConfig() != null) {
            return false;
        }
        int[] next = new int[state.muonConfigs().size()];
        for (ParameterSpec spec : state.specs()) {
            int g = spec.group();
            if (spec.optimizer() != OptimizerKind.MUON || g < 0 || g >= next.length
                    || !spec.name().equals("parameter " + next[g]++ + " of group " + g)) {
                return false;
            }
        }
        return true;
    }

    private static int[] groupSizes(OptimizerState state, int groups) {
        int[] sizes = new int[groups];
        state.specs().forEach(spec -> sizes[spec.group()]++);
        return sizes;
    }

    /** {@code group 0: 2 parameters, group 1: 1 parameter}. */
    private static String sizes(int[] sizes) {
        List<String> out = new ArrayList<>();
        for (int g = 0; g < sizes.length; g++) {
            out.add("group " + g + ": " + sizes[g] + (sizes[g] == 1 ? " parameter" : " parameters"));
        }
        return Messages.shortened(String.join(", ", out));
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
                refused.add(StateMismatchException.Difference.of(mine.name(), null, StateMismatchException.Field.SHAPE,
                        Arrays.toString(mine.shape()), Arrays.toString(spec.shape()), null));
                continue;
            }
            if (spec.dtype().value != mine.dtype().value) {
                refused.add(StateMismatchException.Difference.of(mine.name(), null, StateMismatchException.Field.DTYPE,
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
            refused.add(StateMismatchException.Difference.of(left.name(), null, StateMismatchException.Field.PRESENCE, "absent", "present",
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
