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
 * updates applied to it (AdamW's bias correction); a skipped step changes neither.
 */
final class StepClock {
    private final Set<ParameterKey> calledThisStep = new HashSet<>();
    private final Map<ParameterKey, Integer> updates = new HashMap<>();
    private long opened;
    private long applied;
    private boolean skipping;

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
        return updates.merge(key, 1, Integer::sum);
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
