package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Block;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.ParameterTracker;
import dev.muon.AssignmentRule;
import dev.muon.MuonConfig;
import dev.muon.NonFinitePolicy;
import dev.muon.StateStorage;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Muon (momentum orthogonalized by Newton–Schulz) as a DJL {@link Optimizer}, for a block whose every trainable
 * parameter is a matrix; {@link MuonAdamW} is the optimizer for a whole model. Hyperparameters are muon-core's
 * {@link MuonConfig}, with its validation and PyTorch's defaults; each update, per parameter and device:
 * <pre>
 *   B = B.lerp(g, 1 − μ);   U = g.lerp(B, μ) if nesterov, else B
 *   O = NS(U)                                  Newton–Schulz in float32 (float64 on request)
 *   p = p·(1 − lr·weightDecay) − lr·ratio·extraScale · O
 * </pre>
 * where {@code ratio} is {@link MuonConfig#adjustLr()}'s for the parameter's {@code rows × cols}.
 *
 * <table>
 *   <caption>Defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>{@link Builder#optConfig}</td><td>{@link MuonConfig#defaults()} (lr 1e-3, momentum 0.95, Nesterov,
 *       weight decay 0.1, 5 steps of (3.4445, −4.7750, 2.0315), float32)</td></tr>
 *   <tr><td>{@link Builder#optLearningRateTracker}</td><td>none: the config's lr</td></tr>
 *   <tr><td>{@link Builder#optNonFinitePolicy}</td><td>{@link NonFinitePolicy#SKIP}</td></tr>
 *   <tr><td>the block</td><td>the trainer's model's, bound at {@link #onTrainingBegin}; or
 *       {@link Builder#optBlock}'s</td></tr>
 * </table>
 *
 * <p>Bind it to the model as {@link MuonAdamW} binds ({@link #trainingConfig(Loss)}, or {@link Builder#optBlock}); a
 * parameter Muon cannot take (a bias, a norm's gain) is refused when the trainer is initialized, before any data is
 * read.
 *
 * <p>DJL calls {@link #update} once per parameter and device, in the order of a hash map, with no call per step:
 * a step here is the run of calls in which no parameter copy repeats, state is kept per parameter and device, and
 * the step count is this optimizer's own. At a step's first call the {@link NonFinitePolicy} sees every gradient
 * of the block, so a skipped or refused step changes nothing. After each update the parameter's gradient is
 * zeroed, as DJL's own optimizers do on its PyTorch engine. Not thread-safe (DJL calls it from one thread).
 *
 * <pre>{@code
 * DefaultTrainingConfig config = Muon.builder().optConfig(MuonConfig.defaults().withLr(0.02)).build()
 *         .trainingConfig(Loss.l2Loss());
 * }</pre>
 */
public final class Muon extends BoundOptimizer {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Muon.class);
    private final ParameterTracker lrTracker;
    /** The update, and the owner of the config (a checkpoint's load changes its hyperparameters). */
    private final MuonStep step;
    /** Saves and loads the state of {@link #driver} and {@link #step}. */
    private final StateTransfer state;
    /** The matrix view of every trainable parameter by id, checked once all exist; null before. */
    private Map<String, AssignmentRule.Matrix> matrices;
    /** Every trainable parameter's first name, in the block's order. */
    private List<String> names = List.of();

    private Muon(Builder b) {
        super(b, "Muon", b.policy, b.beginNumUpdate);
        DjlSupport.requireDjlDefaults(getWeightDecay(), b.beginNumUpdate, "optConfig(MuonConfig.withWeightDecay)",
                b.stateStorage);
        this.lrTracker = b.lrTracker;
        this.step = new MuonStep(b.config);
        this.state = new StateTransfer(binding, driver, step, null);
        if (b.block != null) {
            binding.bind(b.block);
        }
    }

    /**
     * A builder with the defaults of the class comment.
     *
     * @return the builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Updates one parameter copy: DJL's {@code ParameterStore} calls this once per parameter and device.
     *
     * @param parameterId the parameter's id
     * @param weight      the parameter copy, updated in place
     * @param grad        its gradient; the parameter's own gradient is zeroed afterwards
     * @throws IllegalArgumentException if the block holds a parameter Muon cannot take (checked for all of them
     *                                  when the trainer is initialized, or at the first call, before anything
     *                                  changes) or no trainable parameter of this id
     * @throws IllegalStateException    if the optimizer is bound to no block, under
     *                                  {@link NonFinitePolicy#RAISE}, or if the gradient's shape or dtype differs from
     *                                  the parameter's, naming the parameter; a refused call changes nothing
     */
    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        binding.requireUpdatable(parameterId, weight);
        AssignmentRule.Matrix matrix = matrices.get(parameterId);
        if (matrix == null) {
            throw new IllegalArgumentException(binding.notOurs(parameterId, weight));
        }
        // Before anything changes: a tracker's lr is checked as a config's is.
        MuonConfig config = step.config();
        double lr = lrTracker == null ? config.lr() : config.withLr(
                lrTracker.getNewValue(parameterId, (int) driver.upcomingStep(parameterId, weight))).lr();
        driver.call(parameterId, weight, grad, (key, home, count, stepNumber) -> {
            MuonStep.State state = step.state(key, weight, matrix, home);
            withPreparedGradient(grad, g -> step.apply(weight, g, state, matrix, lr));
        });
    }

    /** Every trainable parameter's matrix view, or a refusal of the first one Muon cannot take; then the set-up. */
    @Override
    void setUp(ModelParameters model, Function<ModelParameters.Entry, DataType> dtypeOf,
               Function<ModelParameters.Entry, NDArray> arrayOf) {
        Map<String, AssignmentRule.Matrix> out = new HashMap<>();
        Map<String, NDArray> weights = new LinkedHashMap<>();
        for (ModelParameters.Entry e : model.entries()) {
            if (!e.parameter().requiresGradient() || out.containsKey(e.id())) {
                continue;
            }
            String label = "parameter '" + e.name() + "'";
            try {
                DjlSupport.requireSupported(dtypeOf.apply(e), label);
                out.put(e.id(), AssignmentRule.matrixOf(e.shape(), step.config(), label, e.convFilter()));
            } catch (IllegalArgumentException refused) {
                if (e.shape().length >= 2) {
                    throw refused;
                }
                throw new IllegalArgumentException(refused.getMessage() + " (Muon updates every trainable "
                        + "parameter of its block; MuonAdamW sends biases and norms to AdamW)", refused);
            }
            weights.put(e.name(), arrayOf.apply(e));
        }
        weights.forEach(step.kernels()::requireServes);
        Map<String, AssignmentRule.Matrix> byName = new HashMap<>();
        for (String name : weights.keySet()) {
            byName.put(name, out.get(model.byName(name).id()));
        }
        step.prepare(weights, byName);
        matrices = out;
        names = List.copyOf(weights.keySet());
        Map<String, NsKernels.Kernel> kernels = new LinkedHashMap<>();
        for (String name : names) {
            ModelParameters.Entry e = model.byName(name);
            kernels.put(name, step.kernels().kernelFor(out.get(e.id()), dtypeOf.apply(e)));
        }
        LOG.info("Muon: {}", step.kernels().note(kernels));
    }

    /**
     * Saves the optimizer's state to a checkpoint in muon-core's format, as {@link MuonAdamW#save} does (one Muon
     * group, no AdamW part): the step count, the config, and per parameter its value and Muon's buffers.
     *
     * @param path where to save
     * @throws IllegalStateException        if the optimizer is bound to no block, or its parameters do not exist yet
     * @throws IllegalArgumentException     for a state the format cannot describe (see {@code docs/djl.md})
     * @throws java.io.UncheckedIOException if the file cannot be written; {@code path} is then unchanged
     */
    public void save(Path path) {
        state.save(path, this::named, null);
    }

    /**
     * Restores a checkpoint saved by {@link #save(Path)}, as {@link MuonAdamW#load} does: every check first, then the
     * values, the buffers, the step count and the hyperparameters. Call it after {@code trainer.initialize}.
     *
     * @param path the checkpoint
     * @throws dev.muon.state.StateFileException     if the file is missing, truncated, corrupt or malformed
     * @throws dev.muon.state.StateMismatchException if it does not fit this optimizer (every difference listed)
     * @throws IllegalStateException                 if the optimizer is bound to no block or its parameters do not
     *                                               exist yet; in every case nothing changes
     */
    public void load(Path path) {
        state.load(path, this::named, null, beginNumUpdate);
    }

    /** Every trainable parameter, under its first name, in the block's order. */
    private List<DjlCheckpoint.Named> named() {
        List<DjlCheckpoint.Named> out = new ArrayList<>();
        for (String name : names) {
            out.add(new DjlCheckpoint.Named(name, binding.model().byName(name), dev.muon.OptimizerKind.MUON, null));
        }
        return out;
    }

    /**
     * The hyperparameters.
     *
     * @return the config
     */
    public MuonConfig config() {
        return step.config();
    }

    /**
     * The momentum buffer of a parameter on a device.
     *
     * @param name   the parameter's name in {@code block.getParameters()}
     * @param device the device of the copy
     * @return the buffer, once the parameter has been updated there
     * @throws IllegalArgumentException if the bound block has no parameter of that name
     */
    public Optional<NDArray> momentumBuffer(String name, Device device) {
        return binding.keyOf(name, device).flatMap(step::momentum);
    }

    /** Collects the settings; {@link #build()} validates them all at once. */
    public static final class Builder extends OptimizerBuilder<Builder> {
        private Block block;
        private MuonConfig config = MuonConfig.defaults();
        private ParameterTracker lrTracker;
        private NonFinitePolicy policy = NonFinitePolicy.SKIP;
        private int beginNumUpdate;
        private StateStorage stateStorage = StateStorage.withParameter();

        private Builder() {
        }

        /**
         * Where the state lives ({@link StateStorage}): muon-djl keeps it beside its parameters, and {@link #build()}
         * refuses any other place, naming it.
         *
         * @param value the storage
         * @return this builder
         */
        public Builder optStateStorage(StateStorage value) {
            this.stateStorage = Objects.requireNonNull(value, "stateStorage must not be null");
            return this;
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * The model's block, whose parameters this optimizer updates: it names them in messages and lets a step
         * check every gradient before its first change. For an optimizer that is not a training listener of the
         * trainer (then nothing else tells it the block); a listener binds to the trainer's model's block.
         *
         * @param value the block (the one given to {@code Model.setBlock})
         * @return this builder
         */
        public Builder optBlock(Block value) {
            this.block = Objects.requireNonNull(value, "block must not be null");
            return this;
        }

        /**
         * The hyperparameters.
         *
         * @param value the config
         * @return this builder
         */
        public Builder optConfig(MuonConfig value) {
            this.config = Objects.requireNonNull(value, "config must not be null");
            return this;
        }

        /**
         * A learning-rate schedule in DJL's form, which replaces the config's lr: step {@code k} (from 1) uses
         * {@code tracker.getNewValue(parameterId, k)}; weight decay uses it too.
         *
         * @param value the tracker
         * @return this builder
         */
        public Builder optLearningRateTracker(ParameterTracker value) {
            this.lrTracker = Objects.requireNonNull(value, "learningRateTracker must not be null");
            return this;
        }

        /**
         * What a step does when a gradient holds NaN or Inf.
         *
         * @param value the policy
         * @return this builder
         */
        public Builder optNonFinitePolicy(NonFinitePolicy value) {
            this.policy = Objects.requireNonNull(value, "nonFinitePolicy must not be null");
            return this;
        }

        /**
         * The step count a resumed run starts from, as DJL's own optimizers take it: the tracker continues at step
         * {@code value + 1}. {@link Muon#load} restores the count with the rest of a checkpoint (one other than the
         * checkpoint's is refused). Checked at {@link #build()}: {@code >= 0}.
         *
         * @param value the steps applied before this run
         * @return this builder
         */
        @Override
        public Builder optBeginNumUpdate(int value) {
            this.beginNumUpdate = value;
            return super.optBeginNumUpdate(value);
        }

        /**
         * Builds the optimizer; with {@link #optBlock}, also binds it: checks every parameter now if they exist, else
         * when the trainer creates them.
         *
         * @return the optimizer
         * @throws IllegalArgumentException for a setting muon-djl does not run (bfloat16, the SVD, GRAM or
         *                                  SYMMETRIC where the native kernels cannot run them),
         *                                  {@code optWeightDecays} or {@code optBeginNumUpdate} other than 0, or a
         *                                  parameter Muon cannot take
         */
        public Muon build() {
            return new Muon(this);
        }
    }
}
