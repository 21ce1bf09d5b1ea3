package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.index.NDIndex;
import dev.muon.NonFinitePolicy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * What every call of {@code Optimizer.update} does around the update itself, for both optimizers of this package:
 * find the step it belongs to ({@link StepClock}), apply the {@link NonFinitePolicy} to the whole step before its
 * first change, hand the update its state's manager and counts, and zero the parameter's gradient afterwards (DJL's
 * PyTorch engine leaves that to the optimizer: its own {@code Adam} and {@code Sgd} zero it after their update, and
 * nothing else does).
 *
 * <p>The policy sees every gradient at the first call of a step: those of the block's trainable parameters and of
 * every parameter copy updated before, on any device. A gradient that the opening scan could not see (the copies
 * on a second device in the very first step) is checked when DJL hands it over; then SKIP leaves that one
 * parameter unchanged and RAISE throws after earlier updates of the step, and both say so.
 */
final class StepDriver {
    /** The update of one call, run after the checks. */
    interface Update {
        /**
         * Updates one parameter copy.
         *
         * @param key   the parameter and device
         * @param home  the manager that owns optimizer state on that device
         * @param count this copy's applied updates, this one included (1 for its first)
         * @param step  the optimizer's applied steps, this one included
         */
        void apply(ParameterKey key, NDManager home, int count, long step);
    }

    private static final Logger LOG = LoggerFactory.getLogger(StepDriver.class);
    private static final NDIndex ALL = new NDIndex("...");

    private final String optimizer;
    private final NonFinitePolicy policy;
    private final Supplier<ModelParameters> model;
    private final StepClock clock;
    /** Every parameter copy updated so far: DJL hands over the same arrays at every step. */
    private final Map<ParameterKey, NDArray> copies = new LinkedHashMap<>();
    private final Map<Device, NDManager> homes = new HashMap<>();
    /** The parameter copies whose gradients the current step's opening scan read. */
    private Set<NDArray> scanned = Set.of();
    private long skipped;

    /**
     * A driver for one optimizer.
     *
     * @param optimizer the optimizer's name, for log lines
     * @param policy    what a non-finite gradient does
     * @param model     the block's parameters, once the optimizer is bound to one
     * @param begin     the steps applied before this run ({@code optBeginNumUpdate})
     */
    StepDriver(String optimizer, NonFinitePolicy policy, Supplier<ModelParameters> model, long begin) {
        this.optimizer = optimizer;
        this.policy = policy;
        this.model = model;
        this.clock = new StepClock(begin);
    }

    /**
     * Takes a checkpoint's counts ({@link StepClock#restore}).
     *
     * @param step      the checkpoint's step
     * @param adamWById each AdamW parameter's update count by id
     */
    void restore(long step, Map<String, Long> adamWById) {
        clock.restore(step, adamWById);
    }

    /**
     * A parameter copy's applied updates (AdamW's step count of it).
     *
     * @param key the parameter and device
     * @return the count
     */
    long updatesOf(ParameterKey key) {
        return clock.updatesOf(key);
    }

    /**
     * The parameter copies DJL handed over so far, by parameter and device.
     *
     * @return the copies
     */
    Map<ParameterKey, NDArray> copies() {
        return Collections.unmodifiableMap(copies);
    }

    /**
     * Runs one call of {@code Optimizer.update}.
     *
     * @param id     the parameter's id
     * @param weight the parameter copy
     * @param grad   its gradient (on multiple devices, the sum over devices)
     * @param update the update
     * @throws IllegalStateException under {@link NonFinitePolicy#RAISE}, naming the parameter; if the gradient's
     *                               shape or dtype differs from the parameter's, naming it, before anything changes
     */
    void call(String id, NDArray weight, NDArray grad, Update update) {
        requireMatches(id, weight, grad);
        ParameterKey key = new ParameterKey(id, weight.getDevice());
        boolean skipThis = false;
        if (clock.opensStep(key)) {
            String bad = policy == NonFinitePolicy.IGNORE ? null : openingScan(id, weight, grad);
            if (bad != null && policy == NonFinitePolicy.RAISE) {
                throw new IllegalStateException("the gradient of parameter '" + bad + "' holds NaN or Inf "
                        + "(nonFinitePolicy RAISE); nothing was changed");
            }
            clock.open(bad != null);
            if (bad != null) {
                skipped++;
                LOG.warn("{}: step {} skipped: the gradient of parameter '{}' holds NaN or Inf", optimizer,
                        clock.applied() + 1, bad);
            }
        } else if (!clock.skipping() && policy != NonFinitePolicy.IGNORE && !scanned.contains(weight)
                && GradientScan.hasNonFinite(grad)) {
            String what = "the gradient of parameter '" + model.get().nameOf(id) + "' on " + key.device()
                    + " holds NaN or Inf";
            if (policy == NonFinitePolicy.RAISE) {
                throw new IllegalStateException(what + " (nonFinitePolicy RAISE); " + clock.callsThisStep()
                        + " updates of this step were applied before DJL handed it over");
            }
            LOG.warn("{}: {}; only this parameter copy skips step {}, which the step's first call could not see",
                    optimizer, what, clock.applied());
            skipThis = true;
        }
        clock.record(key);
        copies.putIfAbsent(key, weight);
        if (!clock.skipping() && !skipThis) {
            update.apply(key, home(weight), clock.countUpdate(key), clock.applied());
        }
        zeroGradient(weight);
    }

    /**
     * Refuses a gradient of another shape or dtype than its parameter before the call changes anything (no step
     * opened, no state created, no gradient zeroed), as muon-core's {@code GradientCheck} does: DJL's engine would
     * broadcast or promote it into the update, or fail midway with a message that names no parameter.
     */
    private void requireMatches(String id, NDArray weight, NDArray grad) {
        long[] gradShape = grad.getShape().getShape();
        long[] shape = weight.getShape().getShape();
        if (!Arrays.equals(gradShape, shape)) {
            throw new IllegalStateException("the gradient of parameter '" + model.get().nameOf(id) + "' has shape "
                    + Arrays.toString(gradShape) + " but the parameter has shape " + Arrays.toString(shape));
        }
        if (grad.getDataType() != weight.getDataType()) {
            throw new IllegalStateException("the gradient of parameter '" + model.get().nameOf(id) + "' has dtype "
                    + grad.getDataType() + " but the parameter has dtype " + weight.getDataType()
                    + "; a gradient must have its parameter's dtype");
        }
    }

    /**
     * The step a call would apply, if its step is applied: the current one, or the next when the call opens it.
     * Lets a caller check what the call needs (a tracker's lr) before anything changes.
     *
     * @param id     the parameter's id
     * @param weight the parameter copy
     * @return the applied-step number, from 1
     */
    long upcomingStep(String id, NDArray weight) {
        return clock.opensStep(new ParameterKey(id, weight.getDevice())) ? clock.applied() + 1 : clock.applied();
    }

    /**
     * Reads every gradient the step will use that exists now; returns the first non-finite one's parameter name.
     */
    private String openingScan(String id, NDArray weight, NDArray grad) {
        Map<NDArray, String> arrays = new IdentityHashMap<>();
        ModelParameters model = this.model.get();
        for (ModelParameters.Entry e : model.entries()) {
            if (e.parameter().requiresGradient() && e.parameter().isInitialized()) {
                arrays.putIfAbsent(e.parameter().getArray(), e.name());
            }
        }
        copies.forEach((k, array) -> arrays.putIfAbsent(array, model.nameOf(k.parameterId())));
        arrays.remove(weight);
        Set<NDArray> read = Collections.newSetFromMap(new IdentityHashMap<>());
        read.add(weight);
        try (NDScope scope = new NDScope()) {
            scope.suppressNotUsedWarning();
            List<NDArray> grads = new ArrayList<>();
            List<String> names = new ArrayList<>();
            grads.add(grad);
            names.add(model.nameOf(id));
            for (Map.Entry<NDArray, String> a : arrays.entrySet()) {
                if (a.getKey().hasGradient()) {
                    grads.add(a.getKey().getGradient());
                    names.add(a.getValue());
                    read.add(a.getKey());
                }
            }
            scanned = read;
            if (GradientScan.allFinite(grads)) {
                return null;
            }
            // The slow scan only on a step that is skipped or refused anyway: it names the culprit.
            for (int i = 0; i < grads.size(); i++) {
                if (GradientScan.hasNonFinite(grads.get(i))) {
                    return names.get(i);
                }
            }
            return names.get(0);
        }
    }

    /**
     * The gradient as DJL's optimizers take it: times {@code rescaleGrad}, then clipped to
     * {@code [−clipGrad, clipGrad]} unless {@code clipGrad} is negative (the builder's {@code setRescaleGrad} and
     * {@code optClipGrad}; both off by default, and then the gradient itself).
     *
     * @param grad        the gradient, never written
     * @param rescaleGrad the factor
     * @param clipGrad    the bound, negative for none
     * @return the gradient to use, a new array inside the caller's scope unless both are off
     */
    static NDArray prepared(NDArray grad, float rescaleGrad, float clipGrad) {
        NDArray g = grad;
        if (rescaleGrad != 1f) {
            g = g.mul(rescaleGrad);
        }
        if (clipGrad >= 0) {
            g = g.clip(-clipGrad, clipGrad);
        }
        return g;
    }

    /**
     * The manager that owns the optimizer state of a weight's device: a child of the weight's own manager, so that
     * the state is freed with the model. It only owns: the state is created on the weight's device (DJL's
     * {@code ParameterStore} too attaches every device's copy to one manager).
     */
    NDManager home(NDArray weight) {
        return homes.computeIfAbsent(weight.getDevice(), d -> weight.getManager().newSubManager());
    }

    /** Zeroes the gradient in place: {@code fill}, not {@code g − g}, which keeps a NaN. */
    private static void zeroGradient(NDArray weight) {
        if (!weight.hasGradient()) {
            return;
        }
        try (NDScope scope = new NDScope()) {
            scope.suppressNotUsedWarning();
            weight.getGradient().set(ALL, 0);
        }
    }

    /**
     * The steps applied.
     *
     * @return the count
     */
    long stepCount() {
        return clock.applied();
    }

    /**
     * The steps skipped whole by {@link NonFinitePolicy#SKIP}.
     *
     * @return the count
     */
    long skippedSteps() {
        return skipped;
    }
}
