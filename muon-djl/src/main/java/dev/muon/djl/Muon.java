package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDScope;
import ai.djl.nn.Block;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.ParameterTracker;
import dev.muon.AssignmentRule;
import dev.muon.MuonConfig;
import dev.muon.NonFinitePolicy;
import dev.muon.StateStorage;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

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
 *   <tr><td>{@link Builder#optBlock}</td><td>required</td></tr>
 * </table>
 *
 * <p>DJL calls {@link #update} once per parameter and device, in the order of a hash map, with no call per step:
 * a step here is the run of calls in which no parameter copy repeats, state is kept per parameter and device, and
 * the step count is this optimizer's own. At a step's first call the {@link NonFinitePolicy} sees every gradient
 * of the block, so a skipped or refused step changes nothing. After each update the parameter's gradient is
 * zeroed, as DJL's own optimizers do on its PyTorch engine. Not thread-safe (DJL calls it from one thread).
 *
 * <pre>{@code
 * Optimizer muon = Muon.builder().optBlock(block)
 *         .optConfig(MuonConfig.defaults().withLr(0.02))
 *         .build();
 * }</pre>
 */
public final class Muon extends Optimizer {
    private final MuonConfig config;
    private final ParameterTracker lrTracker;
    private final ModelParameters model;
    private final MuonStep step;
    private final StepDriver driver;
    /** The matrix view of every trainable parameter by id, checked once all exist; null before. */
    private Map<String, AssignmentRule.Matrix> matrices;

    private Muon(Builder b) {
        super(b);
        if (b.block == null) {
            throw new IllegalStateException("Muon needs the model's block: call optBlock(block) before build(); "
                    + "DJL hands an optimizer only parameter ids, and the block names and shapes them");
        }
        DjlSupport.requireDjlDefaults(getWeightDecay(), b.beginNumUpdate, "optConfig(MuonConfig.withWeightDecay)",
                b.stateStorage);
        this.config = b.config;
        this.lrTracker = b.lrTracker;
        this.model = ModelParameters.of(b.block);
        this.step = new MuonStep(config);
        this.driver = new StepDriver("Muon", b.policy, model);
        if (b.block.isInitialized()) {
            matrices = checkParameters();
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
     *                                  at the first call, before anything changes) or no trainable parameter of
     *                                  this id
     * @throws IllegalStateException    under {@link NonFinitePolicy#RAISE}, naming the parameter
     */
    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        if (matrices == null) {
            matrices = checkParameters();
        }
        AssignmentRule.Matrix matrix = matrices.get(parameterId);
        if (matrix == null) {
            throw new IllegalArgumentException("parameter '" + model.nameOf(parameterId) + "' is not a trainable "
                    + "parameter of the block given to optBlock (frozen when the optimizer first ran, or another "
                    + "block's)");
        }
        // Before anything changes: a tracker's lr is checked as a config's is.
        double lr = lrTracker == null ? config.lr() : config.withLr(
                lrTracker.getNewValue(parameterId, (int) driver.upcomingStep(parameterId, weight))).lr();
        driver.call(parameterId, weight, grad, (key, home, count, stepNumber) -> {
            MuonStep.State state = step.state(key, weight, matrix, home);
            try (NDScope scope = new NDScope()) {
                scope.suppressNotUsedWarning();
                step.apply(weight, StepDriver.prepared(grad, rescaleGrad, clipGrad), state, matrix, lr);
            }
        });
    }

    /** Every trainable parameter's matrix view, or the first one Muon cannot take. */
    private Map<String, AssignmentRule.Matrix> checkParameters() {
        Map<String, AssignmentRule.Matrix> out = new HashMap<>();
        for (ModelParameters.Entry e : model.entries()) {
            if (!e.parameter().requiresGradient() || out.containsKey(e.id())) {
                continue;
            }
            String label = "parameter '" + e.name() + "'";
            NDArray array = e.array();
            DjlSupport.requireSupported(array.getDataType(), label);
            out.put(e.id(), AssignmentRule.matrixOf(array.getShape().getShape(), config, label));
        }
        Map<String, NDArray> weights = new java.util.LinkedHashMap<>();
        for (ModelParameters.Entry e : model.entries()) {
            if (out.containsKey(e.id())) {
                weights.putIfAbsent(e.name(), e.array());
            }
        }
        step.prepare(weights);
        return out;
    }

    /**
     * The hyperparameters.
     *
     * @return the config
     */
    public MuonConfig config() {
        return config;
    }

    /**
     * The steps applied so far (skipped ones not counted).
     *
     * @return the count
     */
    public long stepCount() {
        return driver.stepCount();
    }

    /**
     * The steps skipped whole because a gradient held NaN or Inf ({@link NonFinitePolicy#SKIP}).
     *
     * @return the count
     */
    public long skippedSteps() {
        return driver.skippedSteps();
    }

    /**
     * The momentum buffer of a parameter on a device.
     *
     * @param name   the parameter's name in {@code block.getParameters()}
     * @param device the device of the copy
     * @return the buffer, once the parameter has been updated there
     */
    public Optional<NDArray> momentumBuffer(String name, Device device) {
        ModelParameters.Entry e = model.byName(name);
        return e == null ? Optional.empty() : step.buffer(new ParameterKey(e.id(), device));
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
         * check every gradient before its first change. Required.
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
         * Refused unless 0 (checked at {@link #build()}): the state of a run cannot be restored.
         *
         * @param value the initial update count
         * @return this builder
         */
        @Override
        public Builder optBeginNumUpdate(int value) {
            this.beginNumUpdate = value;
            return super.optBeginNumUpdate(value);
        }

        /**
         * Builds the optimizer; with an initialized block, also checks every parameter.
         *
         * @return the optimizer
         * @throws IllegalStateException    without {@link #optBlock}
         * @throws IllegalArgumentException for a setting muon-djl does not run (bfloat16, the SVD, GRAM or
         *                                  SYMMETRIC), {@code optWeightDecays} or {@code optBeginNumUpdate} other
         *                                  than 0, or a parameter Muon cannot take
         */
        public Muon build() {
            return new Muon(this);
        }
    }
}
