package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Ties an optimizer to the block whose parameters it updates, and runs the optimizer's checks as early as DJL allows.
 *
 * <p>DJL hands an optimizer nothing before the first {@code trainer.step()}: {@code Trainer}'s constructor passes the
 * optimizer to a {@code LocalParameterServer}, whose {@code init} (which {@code trainer.initialize} calls per
 * parameter) does nothing, and {@code update} names parameters by opaque ids. Two of DJL's public hooks come earlier:
 * the {@code Trainer}'s constructor calls every training listener's {@code onTrainingBegin(trainer)}, which gives the
 * model, and so the block, its names and registration order; and {@code trainer.initialize} creates each parameter's
 * array through the parameter's {@code Initializer}, once every shape is known. So the optimizer binds itself to the
 * block at {@code onTrainingBegin} (or at build, given {@code optBlock}), checks the names then, and wraps the
 * initializer of every parameter not created yet: when the last one is created, it classifies and checks the
 * parameters (still inside {@code trainer.initialize}, before any data is read), then puts the original initializers
 * back. A block initialized before binding is checked at once; a parameter DJL never creates that way leaves the check
 * to the first update, as does a block whose initializers a training config replaced after an {@code optBlock} bind
 * without the listener.
 */
final class ModelBinding {
    /** What an optimizer does once the parameters have shapes: classify and check them, then set them up. */
    interface Setup {
        /**
         * Runs the checks and the set-up; throws, changing nothing, where they refuse.
         *
         * @param model   the block's parameters
         * @param dtypeOf each parameter's dtype
         * @param arrayOf each parameter's array (the one DJL is creating included)
         */
        void run(ModelParameters model, Function<ModelParameters.Entry, DataType> dtypeOf,
                 Function<ModelParameters.Entry, NDArray> arrayOf);
    }

    private final String optimizer;
    private final Consumer<ModelParameters> onBind;
    private final Setup setup;
    private Block block;
    private ModelParameters model;
    private boolean ready;
    /** The parameters whose arrays DJL has not created yet, with their original initializers. */
    private final Map<Parameter, Initializer> waiting = new IdentityHashMap<>();
    /** The dtype DJL creates each waiting parameter's array with. */
    private final Map<Parameter, DataType> created = new IdentityHashMap<>();

    /**
     * A binding for one optimizer.
     *
     * @param optimizer its class's simple name, for messages
     * @param onBind    what it checks from the block's names alone, before anything is bound
     * @param setup     what it checks and sets up once the parameters have shapes
     */
    ModelBinding(String optimizer, Consumer<ModelParameters> onBind, Setup setup) {
        this.optimizer = optimizer;
        this.onBind = onBind;
        this.setup = setup;
    }

    /**
     * Binds the optimizer to a block: checks what its names allow, then runs the set-up now (initialized block) or
     * when DJL creates the last parameter. Binding again to the same block only re-wraps initializers a training
     * config replaced.
     *
     * @param target the model's block
     * @throws IllegalStateException    if the optimizer is bound to another block
     * @throws IllegalArgumentException if the names or, for an initialized block, the parameters are refused; the
     *                                  optimizer then stays unbound
     */
    void bind(Block target) {
        if (block == target) {
            if (!ready) {
                waitForArrays();
            }
            return;
        }
        if (block != null) {
            throw new IllegalStateException(optimizer + " is bound to the block of another model ("
                    + summary(model) + ") and keeps its parameters' state; an optimizer serves one model: build a "
                    + "new " + optimizer + " for this trainer");
        }
        ModelParameters m = ModelParameters.of(target);
        onBind.accept(m);
        if (m.entries().stream().allMatch(e -> e.parameter().isInitialized())) {
            runSetup(m, e -> e.parameter().getArray());
            block = target;
            model = m;
            return;
        }
        block = target;
        model = m;
        waitForArrays();
    }

    /** Wraps the initializer of every parameter not created yet (unless it is wrapped already). */
    private void waitForArrays() {
        for (ModelParameters.Entry e : model.entries()) {
            Parameter p = e.parameter();
            if (p.isInitialized()) {
                continue;
            }
            Initializer current = p.getInitializer();
            if (current instanceof Waiting w && w.owner() == this) {
                continue;
            }
            waiting.put(p, current);
            p.setInitializer(new Waiting(this, p, current));
        }
    }

    /** A parameter's initializer while the optimizer waits for its array. */
    private record Waiting(ModelBinding owner, Parameter parameter, Initializer original) implements Initializer {
        @Override
        public NDArray initialize(NDManager manager, Shape shape, DataType dataType) {
            NDArray array = original == null ? null : original.initialize(manager, shape, dataType);
            owner.created(parameter, array, dataType);
            return array;
        }
    }

    /** DJL created a waiting parameter's array: the last one runs the set-up, the original initializers back. */
    private void created(Parameter parameter, NDArray array, DataType dtype) {
        if (ready || !waiting.containsKey(parameter)) {
            return;
        }
        created.put(parameter, dtype);
        parameter.setInitializer(waiting.remove(parameter));
        if (!waiting.isEmpty()) {
            return;
        }
        Map<Parameter, NDArray> pending = Collections.singletonMap(parameter, array);
        runSetup(model, e -> e.parameter().isInitialized() ? e.parameter().getArray()
                : pending.get(e.parameter()));
    }

    /** The set-up, with each parameter's dtype from its array or from the call that is creating it. */
    private void runSetup(ModelParameters m, Function<ModelParameters.Entry, NDArray> arrayOf) {
        setup.run(m, e -> {
            NDArray a = arrayOf.apply(e);
            if (a != null) {
                return a.getDataType();
            }
            DataType d = created.get(e.parameter());
            if (d == null) {
                throw new IllegalStateException("parameter '" + e.name() + "' is not initialized: the optimizer "
                        + "classifies the block's parameters once they exist (after trainer.initialize(...))");
            }
            return d;
        }, e -> {
            NDArray a = arrayOf.apply(e);
            if (a == null) {
                throw new IllegalStateException("parameter '" + e.name() + "' is not initialized: the optimizer "
                        + "classifies the block's parameters once they exist (after trainer.initialize(...))");
            }
            return a;
        });
        ready = true;
        for (Map.Entry<Parameter, Initializer> w : waiting.entrySet()) {
            w.getKey().setInitializer(w.getValue());
        }
        waiting.clear();
    }

    /**
     * The checks of an update, before anything changes: a block is bound, the parameter is one of its, and the
     * set-up ran (it runs now on the arrays if DJL created them another way).
     *
     * @param id     the id DJL passed
     * @param weight the array DJL passed
     * @throws IllegalStateException    if no block is bound, naming the ways to bind one
     * @throws IllegalArgumentException if the parameter is not the block's ({@link #notOurs}), or the set-up refuses
     *                                  the parameters
     */
    void requireUpdatable(String id, NDArray weight) {
        requireBound();
        if (model.byId(id) == null) {
            throw new IllegalArgumentException(notOurs(id, weight));
        }
        requireReady();
    }

    private void requireBound() {
        if (block == null) {
            throw new IllegalStateException(optimizer + " is not bound to a model, so it cannot tell which "
                    + "parameter DJL hands it (DJL names them by ids only). Bind it with the trainer: "
                    + "optimizer.trainingConfig(loss), or config.optOptimizer(optimizer).addTrainingListeners("
                    + "optimizer); or give the block at build with optBlock(block)");
        }
    }

    /**
     * Makes sure the set-up ran: runs it on the arrays if DJL created them another way.
     *
     * @throws IllegalStateException    if no block is bound, naming the ways to bind one, or a parameter does not
     *                                  exist yet
     * @throws IllegalArgumentException if the set-up refuses the parameters
     */
    void requireReady() {
        requireBound();
        if (!ready) {
            runSetup(model, e -> e.parameter().isInitialized() ? e.parameter().getArray() : null);
        }
    }

    /**
     * Whether the set-up ran.
     *
     * @return true once the parameters were checked
     */
    boolean isReady() {
        return ready;
    }

    /**
     * The bound block's parameters.
     *
     * @return the parameters, or null before binding
     */
    ModelParameters model() {
        return model;
    }

    /**
     * The key of a named parameter's copy on a device.
     *
     * @param name   the parameter's name in {@code block.getParameters()}
     * @param device the device of the copy
     * @return the key; empty before binding (nothing has been updated then)
     * @throws IllegalArgumentException if the bound block has no parameter of that name: a misspelt name would
     *                                  otherwise read as "not updated yet"
     */
    Optional<ParameterKey> keyOf(String name, Device device) {
        java.util.Objects.requireNonNull(name, "name must not be null");
        if (model == null) {
            return Optional.empty();
        }
        ModelParameters.Entry e = model.byName(name);
        if (e == null) {
            throw new IllegalArgumentException("name must be a parameter of the block " + optimizer + " is bound to; '"
                    + name + "' is not (" + summary(model) + ")");
        }
        return Optional.of(new ParameterKey(e.id(), device));
    }

    /**
     * A message for an update of a parameter the optimizer does not update: another block's (a reused optimizer),
     * or one frozen when the block was classified. Names the parameter, never DJL's id, and says what to do.
     *
     * @param id     the id DJL passed
     * @param weight the array DJL passed
     * @return the message
     */
    String notOurs(String id, NDArray weight) {
        ModelParameters.Entry e = model.byId(id);
        if (e != null) {
            return "parameter '" + e.name() + "' did not require grad when " + optimizer + " classified the block, "
                    + "so it has no optimizer; freeze or unfreeze parameters before trainer.initialize, or build a "
                    + "new " + optimizer;
        }
        String what = weight.getName() == null || weight.getName().isEmpty() ? "an array"
                : "an array named '" + weight.getName() + "'";
        return optimizer + " was handed " + what + " of shape "
                + java.util.Arrays.toString(weight.getShape().getShape()) + ", which is not a "
                + "parameter of the block it is bound to (" + summary(model) + "): an optimizer serves one model. "
                + "Build a new " + optimizer + " for each trainer of another model";
    }

    /** The first parameters of a block, for messages. */
    private static String summary(ModelParameters m) {
        List<String> names = new ArrayList<>();
        Map<String, Boolean> seen = new LinkedHashMap<>();
        m.entries().forEach(e -> seen.putIfAbsent(e.name(), true));
        seen.keySet().forEach(names::add);
        int shown = Math.min(3, names.size());
        String head = String.join(", ", names.subList(0, shown));
        return names.size() <= shown ? head : head + ", ... " + names.size() + " in all";
    }

    /**
     * The parameters the optimizer still waits for (for tests).
     *
     * @return their count
     */
    int waitingCount() {
        return waiting.size();
    }

    /**
     * The identities of the parameters whose initializers are wrapped (for tests).
     *
     * @return the parameters
     */
    Set<Parameter> waitingParameters() {
        return Collections.unmodifiableSet(waiting.keySet());
    }
}
