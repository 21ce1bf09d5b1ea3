package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.ParameterTracker;
import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.AssignmentRule;
import dev.muon.ConvWeights;
import dev.muon.MuonConfig;
import dev.muon.NonFinitePolicy;
import dev.muon.OptimizerKind;
import dev.muon.StateStorage;

import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * One DJL {@link Optimizer} for a whole model: Muon for the hidden weight matrices, AdamW with PyTorch's formula
 * for the rest (embeddings, the output layer, biases, norms). Which parameter goes where follows muon-core's rules
 * ({@link ParameterAssignment}), can be overridden, and is logged when the block is first classified.
 *
 * <p>Replacing DJL's {@code Adam} is one line; the learning rate carries over to both groups, because the Muon
 * side then uses {@link AdjustLr#MATCH_RMS_ADAMW} (Moonlight's scaling, the update RMS of AdamW), as muon-core's
 * {@code MuonAdamW.dropIn} does:
 * <pre>{@code
 * // Optimizer optimizer = Optimizer.adam().optLearningRateTracker(Tracker.fixed(1e-3f)).build();
 * Optimizer optimizer = MuonAdamW.builder().optBlock(block).optLearningRateTracker(Tracker.fixed(1e-3f)).build();
 * }</pre>
 *
 * <table>
 *   <caption>Defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>AdamW group</td><td>{@link AdamWConfig#defaults()} (PyTorch's: lr 1e-3, betas 0.9/0.999, eps 1e-8,
 *       weight decay 0.01)</td></tr>
 *   <tr><td>Muon group</td><td>{@link MuonConfig#defaults()} with the AdamW group's lr and weight decay and
 *       {@link AdjustLr#MATCH_RMS_ADAMW}; 4-D conv filters flattened whatever the config says</td></tr>
 *   <tr><td>learning rates</td><td>the configs'; {@link Builder#optLearningRateTracker} sets both groups'</td></tr>
 *   <tr><td>assignment</td><td>muon-core's default rule, and the last matrix on AdamW as the output layer</td></tr>
 *   <tr><td>non-finite gradients</td><td>{@link NonFinitePolicy#SKIP}</td></tr>
 *   <tr><td>empty Muon group</td><td>refused ({@link Builder#optAllowEmptyMuon(boolean)})</td></tr>
 *   <tr><td>{@link Builder#optBlock}</td><td>required</td></tr>
 * </table>
 *
 * <p>Under DJL's call order (one call per parameter and device, in hash order, no call per step) a step is the
 * run of calls in which no parameter copy repeats; state is kept per parameter and device, AdamW's bias
 * correction counts each copy's own updates, and the step count is this optimizer's own. At a step's first call
 * the {@link NonFinitePolicy} sees every gradient of the block, so a skipped or refused step changes nothing. After
 * each update the parameter's gradient is zeroed, as DJL's own optimizers do on its PyTorch engine. Not
 * thread-safe (DJL calls it from one thread).
 */
public final class MuonAdamW extends Optimizer {
    private static final System.Logger LOG = System.getLogger(MuonAdamW.class.getName());

    private final MuonConfig muonConfig;
    private final AdamWConfig adamWConfig;
    private final ParameterTracker muonTracker;
    private final ParameterTracker adamWTracker;
    private final ParameterAssignment.Rules rules;
    private final boolean allowEmptyMuon;
    private final ModelParameters model;
    private final MuonStep muon;
    private final AdamWStep adamW = new AdamWStep();
    private final StepDriver driver;
    private ParameterAssignment assignment;
    /** The matrix view of every Muon parameter by id, set with the assignment. */
    private final Map<String, AssignmentRule.Matrix> matrices = new HashMap<>();

    private MuonAdamW(Builder b) {
        super(b);
        if (b.block == null) {
            throw new IllegalStateException("MuonAdamW needs the model's block: call optBlock(block) before build(); "
                    + "DJL hands an optimizer only parameter ids, and the block names them, which decides what "
                    + "goes to Muon");
        }
        this.adamWConfig = b.adamWConfig;
        MuonConfig muonBase = b.muonConfig != null ? b.muonConfig : MuonConfig.defaults().withLr(adamWConfig.lr())
                .withWeightDecay(adamWConfig.weightDecay()).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW);
        this.muonConfig = muonBase.withConvWeights(ConvWeights.FLATTEN);
        DjlSupport.requireDjlDefaults(getWeightDecay(), b.beginNumUpdate,
                "optMuon(MuonConfig.withWeightDecay) and optAdamW(AdamWConfig.withWeightDecay)", b.muonStateStorage);
        this.muonTracker = b.muonTracker;
        this.adamWTracker = b.adamWTracker;
        // Copies in the builder's order, so that a message names the first bad name given.
        this.rules = new ParameterAssignment.Rules(b.muonRule, Collections.unmodifiableSet(new LinkedHashSet<>(
                b.forceMuon)), Collections.unmodifiableSet(new LinkedHashSet<>(b.forceAdamW)), b.outputLayer);
        this.allowEmptyMuon = b.allowEmptyMuon;
        this.model = ModelParameters.of(b.block);
        ParameterAssignment.checkNames(model, rules);
        this.muon = new MuonStep(muonConfig);
        this.driver = new StepDriver("MuonAdamW", b.policy, model);
        if (b.block.isInitialized()) {
            classify();
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
     * Updates one parameter copy with Muon or AdamW: DJL's {@code ParameterStore} calls this once per parameter
     * and device. The first call classifies the block's parameters and logs the table.
     *
     * @param parameterId the parameter's id
     * @param weight      the parameter copy, updated in place
     * @param grad        its gradient; the parameter's own gradient is zeroed afterwards
     * @throws IllegalArgumentException if the classification fails (see {@link #assignment()}) or the block has
     *                                  no trainable parameter of this id
     * @throws IllegalStateException    under {@link NonFinitePolicy#RAISE}, naming the parameter
     */
    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        OptimizerKind kind = assignment().optimizerOf(parameterId);
        if (kind == null) {
            throw new IllegalArgumentException("parameter '" + model.nameOf(parameterId) + "' is not a trainable "
                    + "parameter of the block given to optBlock (frozen when the optimizer first ran, or another "
                    + "block's)");
        }
        double lr = learningRate(kind, parameterId, driver.upcomingStep(parameterId, weight));
        driver.call(parameterId, weight, grad, (key, home, count, stepNumber) -> {
            if (kind == OptimizerKind.MUON) {
                AssignmentRule.Matrix matrix = matrices.get(parameterId);
                MuonStep.State state = muon.state(key, weight, matrix, home);
                try (NDScope scope = new NDScope()) {
                    scope.suppressNotUsedWarning();
                    muon.apply(weight, StepDriver.prepared(grad, rescaleGrad, clipGrad), state, matrix, lr);
                }
            } else {
                NDList moments = adamW.moments(key, weight, home);
                try (NDScope scope = new NDScope()) {
                    scope.suppressNotUsedWarning();
                    AdamWStep.apply(weight, StepDriver.prepared(grad, rescaleGrad, clipGrad), moments, adamWConfig,
                            lr, count);
                }
            }
        });
    }

    /**
     * The lr of a parameter's update at a step: its group's config's, or its tracker's, checked as a config's is
     * (so before anything changes).
     */
    private double learningRate(OptimizerKind kind, String parameterId, long step) {
        if (kind == OptimizerKind.MUON) {
            return muonTracker == null ? muonConfig.lr()
                    : muonConfig.withLr(muonTracker.getNewValue(parameterId, (int) step)).lr();
        }
        return adamWTracker == null ? adamWConfig.lr()
                : adamWConfig.withLr(adamWTracker.getNewValue(parameterId, (int) step)).lr();
    }

    /**
     * Which optimizer updates each parameter, and why; classifies the block at the first call.
     *
     * @return the assignment
     * @throws IllegalStateException    if the block is not initialized yet (call {@code trainer.initialize}
     *                                  first)
     * @throws IllegalArgumentException if an override names a frozen parameter, a shared parameter is forced to
     *                                  Muon, Muon cannot take a parameter sent to it, nothing requires grad, or
     *                                  nothing goes to Muon without {@link Builder#optAllowEmptyMuon(boolean)}
     */
    public ParameterAssignment assignment() {
        if (assignment == null) {
            classify();
        }
        return assignment;
    }

    private void classify() {
        ParameterAssignment table = ParameterAssignment.classify(model, rules, muonConfig, adamWConfig,
                (kind, id) -> learningRate(kind, id, 1));
        if (table.names(OptimizerKind.MUON).isEmpty() && !allowEmptyMuon) {
            throw new IllegalArgumentException("no parameter was assigned to Muon, so this would train with AdamW "
                    + "alone. Muon takes 2-D and 4-D weights whose names do not look like an embedding or a head; "
                    + "check the names below, send parameters with optForceMuon(..) or optMuonWhen(..), or call "
                    + "optAllowEmptyMuon(true) if AdamW alone is intended.\n" + table);
        }
        Map<String, NDArray> weights = new java.util.LinkedHashMap<>();
        Map<String, AssignmentRule.Matrix> views = new HashMap<>();
        for (ModelParameters.Entry e : model.entries()) {
            if (table.optimizerOf(e.id()) == OptimizerKind.MUON && !views.containsKey(e.id())) {
                views.put(e.id(), AssignmentRule.matrixOf(e.array().getShape().getShape(), muonConfig, e.name()));
                weights.put(e.name(), e.array());
            }
        }
        muon.prepare(weights);
        matrices.putAll(views);
        assignment = table;
        LOG.log(System.Logger.Level.INFO, "MuonAdamW: parameter assignment\n" + table);
    }

    /**
     * The Muon group's hyperparameters (with conv filters flattened).
     *
     * @return the config
     */
    public MuonConfig muonConfig() {
        return muonConfig;
    }

    /**
     * The AdamW group's hyperparameters.
     *
     * @return the config
     */
    public AdamWConfig adamWConfig() {
        return adamWConfig;
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
     * The momentum buffer of a Muon parameter on a device.
     *
     * @param name   the parameter's name in {@code block.getParameters()}
     * @param device the device of the copy
     * @return the buffer, once the parameter has been updated there
     */
    public Optional<NDArray> momentumBuffer(String name, Device device) {
        ModelParameters.Entry e = model.byName(name);
        return e == null ? Optional.empty() : muon.buffer(new ParameterKey(e.id(), device));
    }

    /**
     * AdamW's first and second moments of a parameter on a device (not bias corrected).
     *
     * @param name   the parameter's name in {@code block.getParameters()}
     * @param device the device of the copy
     * @return {@code [exp_avg, exp_avg_sq]}, once the parameter has been updated there
     */
    public Optional<NDList> adamWMoments(String name, Device device) {
        ModelParameters.Entry e = model.byName(name);
        return e == null ? Optional.empty() : adamW.moments(new ParameterKey(e.id(), device));
    }

    /** Collects the settings; {@link #build()} validates them all at once. */
    public static final class Builder extends OptimizerBuilder<Builder> {
        private Block block;
        private MuonConfig muonConfig;
        private AdamWConfig adamWConfig = AdamWConfig.defaults();
        private ParameterTracker muonTracker;
        private ParameterTracker adamWTracker;
        private BiPredicate<String, Shape> muonRule;
        private final Set<String> forceMuon = new LinkedHashSet<>();
        private final Set<String> forceAdamW = new LinkedHashSet<>();
        private boolean outputLayer = true;
        private boolean allowEmptyMuon;
        private NonFinitePolicy policy = NonFinitePolicy.SKIP;
        private int beginNumUpdate;
        private StateStorage muonStateStorage = StateStorage.withParameter();

        private Builder() {
        }

        /**
         * Where the Muon state lives ({@link StateStorage}): muon-djl keeps it beside its parameters, and
         * {@link #build()} refuses any other place, naming it.
         *
         * @param value the storage
         * @return this builder
         */
        public Builder optMuonStateStorage(StateStorage value) {
            this.muonStateStorage = Objects.requireNonNull(value, "muonStateStorage must not be null");
            return this;
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * The model's block, whose parameters this optimizer classifies and updates. Required.
         *
         * @param value the block (the one given to {@code Model.setBlock})
         * @return this builder
         */
        public Builder optBlock(Block value) {
            this.block = Objects.requireNonNull(value, "block must not be null");
            return this;
        }

        /**
         * The Muon group's hyperparameters, in place of the drop-in default (4-D filters are flattened whatever
         * its {@code convWeights} says).
         *
         * @param value the config
         * @return this builder
         */
        public Builder optMuon(MuonConfig value) {
            this.muonConfig = Objects.requireNonNull(value, "muon config must not be null");
            return this;
        }

        /**
         * The AdamW group's hyperparameters.
         *
         * @param value the config
         * @return this builder
         */
        public Builder optAdamW(AdamWConfig value) {
            this.adamWConfig = Objects.requireNonNull(value, "adamW config must not be null");
            return this;
        }

        /**
         * A learning-rate schedule in DJL's form for both groups, replacing the configs' lrs: step {@code k}
         * (from 1) uses {@code tracker.getNewValue(parameterId, k)}; weight decay uses it too.
         *
         * @param value the tracker
         * @return this builder
         */
        public Builder optLearningRateTracker(ParameterTracker value) {
            Objects.requireNonNull(value, "learningRateTracker must not be null");
            this.muonTracker = value;
            this.adamWTracker = value;
            return this;
        }

        /**
         * A learning-rate schedule for the Muon group only.
         *
         * @param value the tracker
         * @return this builder
         */
        public Builder optMuonLearningRateTracker(ParameterTracker value) {
            this.muonTracker = Objects.requireNonNull(value, "muonLearningRateTracker must not be null");
            return this;
        }

        /**
         * A learning-rate schedule for the AdamW group only.
         *
         * @param value the tracker
         * @return this builder
         */
        public Builder optAdamWLearningRateTracker(ParameterTracker value) {
            this.adamWTracker = Objects.requireNonNull(value, "adamWLearningRateTracker must not be null");
            return this;
        }

        /**
         * Replaces the default rule (and with it the output-layer rule) by a predicate on DJL's parameter name
         * and the parameter's shape; the override lists still win.
         *
         * @param rule true for a parameter that goes to Muon
         * @return this builder
         */
        public Builder optMuonWhen(BiPredicate<String, Shape> rule) {
            this.muonRule = Objects.requireNonNull(rule, "muonWhen rule must not be null");
            return this;
        }

        /**
         * Sends parameters to Muon whatever the rule says.
         *
         * @param names names in {@code block.getParameters()}
         * @return this builder
         */
        public Builder optForceMuon(String... names) {
            forceMuon.addAll(List.of(names));
            return this;
        }

        /**
         * Sends parameters to AdamW whatever the rule says.
         *
         * @param names names in {@code block.getParameters()}
         * @return this builder
         */
        public Builder optForceAdamW(String... names) {
            forceAdamW.addAll(List.of(names));
            return this;
        }

        /**
         * Whether the last 2-D parameter goes to AdamW as the output layer (on by default; see
         * {@code dev.muon.Assignment} for when it does not apply).
         *
         * @param on whether the rule applies
         * @return this builder
         */
        public Builder optOutputLayerOnAdamW(boolean on) {
            this.outputLayer = on;
            return this;
        }

        /**
         * Whether a block with nothing on Muon is accepted (then this is AdamW alone); refused by default, since
         * it usually means the names did not match the rules.
         *
         * @param allow whether to accept it
         * @return this builder
         */
        public Builder optAllowEmptyMuon(boolean allow) {
            this.allowEmptyMuon = allow;
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
         * Builds the optimizer; with an initialized block, also classifies its parameters.
         *
         * @return the optimizer
         * @throws IllegalStateException    without {@link #optBlock}
         * @throws IllegalArgumentException for a setting muon-djl does not run (bfloat16, the SVD, GRAM or
         *                                  SYMMETRIC), {@code optWeightDecays} or {@code optBeginNumUpdate} other
         *                                  than 0, an override that names no parameter or names one in both
         *                                  lists, or a classification that fails
         */
        public MuonAdamW build() {
            return new MuonAdamW(this);
        }
    }
}
