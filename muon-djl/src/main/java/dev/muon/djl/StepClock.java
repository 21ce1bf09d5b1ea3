package dev.muon.djl;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Where a call of {@code Optimizer.update} falls in the optimizer's steps. DJL has no step hook:
 * {@code ParameterStore.updateAllParameters()} calls {@code update} once per parameter and device, in the hash
 * order of its map. A step is therefore a run of calls in which no {@link ParameterKey} repeats: the first call of
 * a key already called in the current step opens the next step. The counts do not depend on the order of the calls
 * within a step, nor on the number of devices.
 *
 * <p>Two counts: the steps applied (what a learning-rate tracker and {@code stepCount()} see) and, per key, the
 * updates applied to it (AdamW's bias correction); a skipped step changes neither. Both start where a resumed run
 * left them: at {@code optBeginNumUpdate}'s count, as DJL's own optimizers count from it, or at a checkpoint's step
 * and each parameter's AdamW step ({@link #restore}).
 */
final class StepClock {
    private final Set<ParameterKey> calledThisStep = new HashSet<>();
    private final Map<ParameterKey, Integer> updates = new HashMap<>();
    /** Where a parameter's count starts, by id, when a checkpoint set it; else {@link #startAt}. */
    private final Map<String, Long> startById = new HashMap<>();
    private long startAt;
    private long opened;
    private long applied;
    private boolean skipping;

    /** A clock at step 0. */
    StepClock() {
        this(0);
    }

    /**
     * A clock that starts at a step, as a run resumed there: {@code optBeginNumUpdate}'s count.
     *
     * @param begin the steps applied before this run
     */
    StepClock(long begin) {
        this.applied = begin;
        this.startAt = begin;
    }

    /**
     * Takes a checkpoint's counts: the steps applied, and each parameter's AdamW updates (a parameter the
     * checkpoint has no AdamW state for starts at 0, as a new one). Counts of this run are forgotten.
     *
     * @param step      the checkpoint's step
     * @param adamWById each AdamW parameter's update count by id
     */
    void restore(long step, Map<String, Long> adamWById) {
        applied = step;
        opened = 0;
        calledThisStep.clear();
        updates.clear();
        startById.clear();
        startById.putAll(adamWById);
        startAt = 0;
        skipping = false;
    }

    /**
     * A parameter copy's applied updates so far.
     *
     * @param key the parameter and device
     * @return its count, the start count before its first update here
     */
    long updatesOf(ParameterKey key) {
        Integer n = updates.get(key);
        return n != null ? n : startById.getOrDefault(key.parameterId(), startAt);
    }

    /**
     * Whether a call for {@code key} opens a new step.
     *
     * @param key the call's parameter and device
     * @return true for the very first call, and for a key already called in the current step
     */
    boolean opensStep(ParameterKey key) {
        return opened == 0 || calledThisStep.contains(key);
    }

    /**
     * Whether a copy of the parameter has been updated in this run (since the clock started or was restored).
     *
     * @param key the parameter and device
     * @return true after its first update
     */
    boolean updated(ParameterKey key) {
        return updates.containsKey(key);
    }

    /**
     * Opens the next step.
     *
     * @param skip whether the whole step is skipped (its calls change nothing)
     */
    void open(boolean skip) {
        opened++;
        calledThisStep.clear();
        skipping = skip;
        if (!skip) {
            applied++;
        }
    }

    /**
     * Records a call of {@code key} in the current step.
     *
     * @param key the call's parameter and device
     */
    void record(ParameterKey key) {
        calledThisStep.add(key);
    }

    /**
     * Counts one applied update of {@code key}.
     *
     * @param key the parameter and device
     * @return its applied updates so far, this one included (1 for its first)
     */
    int countUpdate(ParameterKey key) {
        return updates.compute(key, (k, n) -> (n != null ? n : Math.toIntExact(updatesOf(k))) + 1);
    }

    /**
     * Whether the current step is skipped.
     *
     * @return true while the calls of a skipped step arrive
     */
    boolean skipping() {
        return skipping;
    }

    /**
     * The steps applied, the current one included once it is open and not skipped.
     *
     * @return the count
     */
    long applied() {
        return applied;
    }

    /**
     * The steps opened, skipped ones included.
     *
     * @return the count
     */
    long opened() {
        return opened;
    }

    /**
     * The calls recorded in the current step.
     *
     * @return the count
     */
    int callsThisStep() {
        return calledThisStep.size();
    }
}
