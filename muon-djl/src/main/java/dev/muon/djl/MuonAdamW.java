package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.ParameterTracker;
import dev.muon.AdamWConfig;
import dev.muon.AdjustLr;
import dev.muon.AssignmentRule;
import dev.muon.ConvWeights;
import dev.muon.MuonConfig;
import dev.muon.NonFinitePolicy;
import dev.muon.OptimizerKind;
import dev.muon.AssignmentTable;
import dev.muon.StateStorage;
import dev.muon.state.CheckpointDocument;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Function;

/**
 * One DJL {@link Optimizer} for a whole model: Muon for the hidden weight matrices, AdamW with PyTorch's formula
 * for the rest (embeddings, the output layer, biases, norms). Which parameter goes where is muon-core's
 * classification ({@link ParameterAssignment}), can be overridden, and is logged (SLF4J, INFO) when the trainer is
 * initialized.
 *
 * <p>Replacing DJL's default optimizer is one line, where DJL builds it: {@code new DefaultTrainingConfig(loss)}
 * builds DJL's {@code Adam}; {@link #trainingConfig(Loss)} builds the same config with this optimizer, registered as a
 * training listener so that it binds itself to the model when the trainer is created (DJL hands an optimizer only
 * parameter ids; the block names them). The learning rate carries over to both groups, because the Muon side then
 * uses {@link AdjustLr#MATCH_RMS_ADAMW} (Moonlight's scaling, the update RMS of AdamW), as muon-core's
 * {@code MuonAdamW.dropIn} does:
 * <pre>{@code
 * // return new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
 * return MuonAdamW.builder().build().trainingConfig(Loss.softmaxCrossEntropyLoss())
 *         .addEvaluator(new Accuracy());
 * }</pre>
 * A config that already names an optimizer takes this one in both places:
 * {@code config.optOptimizer(optimizer).addTrainingListeners(optimizer)}.
 *
 * <p>Every check that needs the parameters runs when {@code trainer.initialize} creates them, before any data is
 * read: the classification and its refusals (an empty Muon group, a 1-D parameter forced to Muon, a shape the Muon
 * config does not take, a dtype muon-djl does not update), Hyperball's norms.
 *
 * <table>
 *   <caption>Defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>AdamW group</td><td>{@link AdamWConfig#defaults()} (PyTorch's: lr 1e-3, betas 0.9/0.999, eps 1e-8,
 *       weight decay 0.01)</td></tr>
 *   <tr><td>Muon group</td><td>{@link MuonConfig#dropIn}: {@link MuonConfig#defaults()} with the AdamW group's lr
 *       and weight decay, {@link AdjustLr#MATCH_RMS_ADAMW} and conv filters flattened ({@link ConvWeights#FLATTEN});
 *       a config given with {@link Builder#optMuon} is used as it is (its {@link ConvWeights#REJECT} refuses a conv
 *       filter sent to Muon)</td></tr>
 *   <tr><td>learning rates</td><td>the configs'; {@link Builder#optLearningRateTracker} sets both groups'</td></tr>
 *   <tr><td>assignment</td><td>muon-core's default rule, and the last matrix on AdamW as the output layer</td></tr>
 *   <tr><td>non-finite gradients</td><td>{@link NonFinitePolicy#SKIP}</td></tr>
 *   <tr><td>empty Muon group</td><td>refused ({@link Builder#optAllowEmptyMuon(boolean)})</td></tr>
 *   <tr><td>the block</td><td>the trainer's model's, bound at {@link #onTrainingBegin}; or
 *       {@link Builder#optBlock}'s</td></tr>
 * </table>
 *
 * <p>Under DJL's call order (one call per parameter and device, in hash order, no call per step) a step is the
 * run of calls in which no parameter copy repeats; state is kept per parameter and device, AdamW's bias
 * correction counts each copy's own updates, and the step count is this optimizer's own. At a step's first call
 * the {@link NonFinitePolicy} sees every gradient of the block, so a skipped or refused step changes nothing. After
 * each update the parameter's gradient is zeroed, as DJL's own optimizers do on its PyTorch engine. Not
 * thread-safe (DJL calls it from one thread). One optimizer serves one model: bound to a block, it refuses another.
 */
public final class MuonAdamW extends BoundOptimizer {
    private static final Logger LOG = LoggerFactory.getLogger(MuonAdamW.class);

    private AdamWConfig adamWConfig;
    private final ParameterTracker muonTracker;
    private final ParameterTracker adamWTracker;
    private final ParameterAssignment.Rules rules;
    private final boolean allowEmptyMuon;
    /** The Muon update, and the owner of the Muon config (a checkpoint's load changes its hyperparameters). */
    private final MuonStep muon;
    private final AdamWStep adamW = new AdamWStep();
    /** Saves and loads the state of {@link #driver}, {@link #muon} and {@link #adamW}. */
    private final StateTransfer state;
    private ParameterAssignment assignment;

    private MuonAdamW(Builder b) {
        super(b, "MuonAdamW", b.policy, b.beginNumUpdate);
        this.adamWConfig = b.adamWConfig;
        MuonConfig muonConfig = b.muonConfig != null ? b.muonConfig : MuonConfig.dropIn(adamWConfig.lr(),
                adamWConfig.weightDecay());
        DjlSupport.requireDjlDefaults(getWeightDecay(), b.beginNumUpdate,
                "optMuon(MuonConfig.withWeightDecay) and optAdamW(AdamWConfig.withWeightDecay)", b.muonStateStorage);
        this.muonTracker = b.muonTracker;
        this.adamWTracker = b.adamWTracker;
        // Copies in the builder's order, so that a message names the first bad name given.
        this.rules = new ParameterAssignment.Rules(b.muonRule, Collections.unmodifiableSet(new LinkedHashSet<>(
                b.forceMuon)), Collections.unmodifiableSet(new LinkedHashSet<>(b.forceAdamW)), b.outputLayer);
        this.allowEmptyMuon = b.allowEmptyMuon;
        this.muon = new MuonStep(muonConfig);
        this.state = new StateTransfer(binding, driver, muon, adamW);
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

    /** The override lists' names, against the block ({@link ParameterAssignment#checkNames}). */
    @Override
    void checkNames(ModelParameters model) {
        ParameterAssignment.checkNames(model, rules);
    }

    /** Classifies the bound block's parameters once they have shapes, checks them, and logs the table. */
    @Override
    void setUp(ModelParameters model, Function<ModelParameters.Entry, DataType> dtypeOf,
               Function<ModelParameters.Entry, NDArray> arrayOf) {
        ParameterAssignment table = ParameterAssignment.classify(model, rules, muon.config(), dtypeOf,
                (kind, id) -> learningRate(kind, id, 1));
        table.requireMuon(allowEmptyMuon);
        Map<String, NDArray> weights = new LinkedHashMap<>();
        Map<String, AssignmentRule.Matrix> matrices = new java.util.HashMap<>();
        Set<String> ids = new java.util.HashSet<>();
        for (ModelParameters.Entry e : model.entries()) {
            if (table.optimizerOf(e.id()) == OptimizerKind.MUON && ids.add(e.id())) {
                weights.put(e.name(), arrayOf.apply(e));
                matrices.put(e.name(), table.matrixOf(e.id()));
            }
        }
        weights.forEach(muon.kernels()::requireServes);
        muon.prepare(weights, matrices);
        Map<String, NsKernels.Kernel> kernels = new LinkedHashMap<>();
        for (AssignmentTable.Row row : table.rows()) {
            ModelParameters.Entry e = model.byName(row.name());
            if (row.optimizer() == OptimizerKind.MUON && table.aliasOf(row.name()) == null) {
                kernels.put(row.name(), muon.kernels().kernelFor(table.matrixOf(e.id()), dtypeOf.apply(e)));
            }
        }
        assignment = table.withNotes(List.of(muon.kernels().note(kernels)));
        LOG.info("MuonAdamW: parameter assignment\n{}", assignment);
    }

    /**
     * Updates one parameter copy with Muon or AdamW: DJL's {@code ParameterStore} calls this once per parameter
     * and device.
     *
     * @param parameterId the parameter's id
     * @param weight      the parameter copy, updated in place
     * @param grad        its gradient; the parameter's own gradient is zeroed afterwards
     * @throws IllegalStateException    if the optimizer is bound to no block (see {@link #trainingConfig}), under
     *                                  {@link NonFinitePolicy#RAISE}, or if the gradient's shape or dtype differs from
     *                                  the parameter's, naming the parameter; a refused call changes nothing
     * @throws IllegalArgumentException if the classification fails (see {@link #assignment()}) or the block has
     *                                  no trainable parameter of this id
     */
    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        binding.requireUpdatable(parameterId, weight);
        OptimizerKind kind = assignment.optimizerOf(parameterId);
        if (kind == null) {
            throw new IllegalArgumentException(binding.notOurs(parameterId, weight));
        }
        double lr = learningRate(kind, parameterId, driver.upcomingStep(parameterId, weight));
        driver.call(parameterId, weight, grad, (key, home, count, stepNumber) -> {
            if (kind == OptimizerKind.MUON) {
                AssignmentRule.Matrix matrix = assignment.matrixOf(parameterId);
                MuonStep.State state = muon.state(key, weight, matrix, home);
                withPreparedGradient(grad, g -> muon.apply(weight, g, state, matrix, lr));
            } else {
                NDList moments = adamW.moments(key, weight, home);
                withPreparedGradient(grad, g -> AdamWStep.apply(weight, g, moments, adamWConfig, lr, count));
            }
        });
    }

    /**
     * The lr of a parameter's update at a step: its group's config's, or its tracker's, checked as a config's is
     * (so before anything changes).
     */
    private double learningRate(OptimizerKind kind, String parameterId, long step) {
        if (kind == OptimizerKind.MUON) {
            MuonConfig muonConfig = muon.config();
            return muonTracker == null ? muonConfig.lr()
                    : muonConfig.withLr(muonTracker.getNewValue(parameterId, (int) step)).lr();
        }
        return adamWTracker == null ? adamWConfig.lr()
                : adamWConfig.withLr(adamWTracker.getNewValue(parameterId, (int) step)).lr();
    }

    /**
     * Which optimizer updates each parameter, and why: classified when the trainer is initialized (or now, for a
     * bound block whose parameters exist).
     *
     * @return the assignment
     * @throws IllegalStateException    if the optimizer is bound to no block, or its parameters do not exist yet
     *                                  (call {@code trainer.initialize} first)
     * @throws IllegalArgumentException if an override names a frozen parameter, a shared parameter is forced to
     *                                  Muon, Muon cannot take a parameter sent to it, nothing requires grad, or
     *                                  nothing goes to Muon without {@link Builder#optAllowEmptyMuon(boolean)}
     */
    public ParameterAssignment assignment() {
        binding.requireReady();
        return assignment;
    }

    /**
     * Saves the optimizer's state to a checkpoint in muon-core's format ({@code dev.muon.state.CheckpointBytes}, the
     * file muon-core's {@code MuonAdamW.save} writes): the step count, both configs, and per parameter, in the
     * table's order, its value, Muon's momentum (and NorMuon's second moment) or AdamW's moments and update count.
     * Written next to {@code path}, checksummed, forced to disk and renamed over it, so a crash leaves the previous
     * file intact. Save the model's weights too, as DJL does ({@code model.save}); this file holds them as well.
     *
     * @param path where to save
     * @throws IllegalStateException        if the optimizer is bound to no block, or its parameters do not exist yet
     * @throws IllegalArgumentException     for a state the format cannot describe (see {@code docs/djl.md})
     * @throws java.io.UncheckedIOException if the file cannot be written; {@code path} is then unchanged
     */
    public void save(Path path) {
        state.save(path, this::named, adamWConfig);
    }

    /**
     * Restores a checkpoint saved by {@link #save(Path)} (or by muon-core's {@code MuonAdamW} for a model of the same
     * names): reads it without running anything from it, checks the checksum and that it fits this optimizer (the
     * same parameters, shapes, dtypes and places, the same Muon build settings, tensors of their shapes, finite,
     * second moments non-negative; every difference listed), then takes the parameters' values, the state, the step
     * count (where a DJL tracker's lr continues) and the hyperparameters, as muon-core's {@code load} does. Call it
     * after {@code trainer.initialize}: the parameters must exist.
     *
     * @param path the checkpoint
     * @throws dev.muon.state.StateFileException     if the file is missing, truncated, corrupt or malformed
     * @throws dev.muon.state.StateMismatchException if it does not fit this optimizer, or its step is not
     *                                               {@code optBeginNumUpdate}'s when that was set
     * @throws IllegalStateException                 if the optimizer is bound to no block or its parameters do not
     *                                               exist yet; in every case nothing changes
     */
    public void load(Path path) {
        CheckpointDocument read = state.load(path, this::named, adamWConfig, beginNumUpdate);
        adamWConfig = read.adamWConfig();
        LOG.info("MuonAdamW: restored step {} from {}", read.step(), path);
    }

    /** Every named parameter of the table, in its order, with its place. */
    private List<DjlCheckpoint.Named> named() {
        List<DjlCheckpoint.Named> out = new ArrayList<>();
        for (AssignmentTable.Row row : assignment.rows()) {
            out.add(new DjlCheckpoint.Named(row.name(), binding.model().byName(row.name()), row.optimizer(),
                    assignment.aliasOf(row.name())));
        }
        return out;
    }

    /**
     * The Muon group's hyperparameters: {@link MuonConfig#dropIn} of the AdamW group's, or {@code optMuon}'s as given.
     *
     * @return the config
     */
    public MuonConfig muonConfig() {
        return muon.config();
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
     * The momentum buffer of a Muon parameter on a device.
     *
     * @param name   the parameter's name in {@code block.getParameters()}
     * @param device the device of the copy
     * @return the buffer, once the parameter has been updated there
     * @throws IllegalArgumentException if the bound block has no parameter of that name, or it is AdamW's
     */
    public Optional<NDArray> momentumBuffer(String name, Device device) {
        return binding.keyOf(name, device).flatMap(key -> muon.momentum(on(OptimizerKind.MUON, name, key)));
    }

    /**
     * AdamW's first and second moments of a parameter on a device (not bias corrected).
     *
     * @param name   the parameter's name in {@code block.getParameters()}
     * @param device the device of the copy
     * @return {@code [exp_avg, exp_avg_sq]}, once the parameter has been updated there
     * @throws IllegalArgumentException if the bound block has no parameter of that name, or it is Muon's
     */
    public Optional<NDList> adamWMoments(String name, Device device) {
        return binding.keyOf(name, device).flatMap(key -> adamW.moments(on(OptimizerKind.ADAMW, name, key)));
    }

    /**
     * The key, once checked to be a parameter of {@code kind}: asking one optimizer for the other's state is a slip.
     */
    private ParameterKey on(OptimizerKind kind, String name, ParameterKey key) {
        OptimizerKind actual = assignment == null ? null : assignment.optimizerOf(key.parameterId());
        if (actual != null && actual != kind) {
            throw new IllegalArgumentException("name must be a parameter on " + label(kind) + "; '" + name + "' is on "
                    + label(actual) + " (see assignment())");
        }
        return key;
    }

    private static String label(OptimizerKind kind) {
        return kind == OptimizerKind.MUON ? "Muon" : "AdamW";
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
         * The model's block, whose parameters this optimizer classifies and updates, for an optimizer that is not a
         * training listener of the trainer (then nothing else tells it the block). Optional otherwise: a listener
         * binds to the trainer's model's block; given both, they must be the same block.
         *
         * @param value the block (the one given to {@code Model.setBlock})
         * @return this builder
         */
        public Builder optBlock(Block value) {
            this.block = Objects.requireNonNull(value, "block must not be null");
            return this;
        }

        /**
         * The Muon group's hyperparameters, in place of the drop-in default ({@link MuonConfig#dropIn}), used as
         * given: with {@link ConvWeights#REJECT} (the default of {@link MuonConfig#defaults()}), a conv filter the
         * rules send to Muon is refused, naming the setting; {@link ConvWeights#FLATTEN} takes it.
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
            forceMuon.addAll(java.util.Arrays.asList(Objects.requireNonNull(names, "forceMuon must not be null")));
            return this;
        }

        /**
         * Sends parameters to AdamW whatever the rule says.
         *
         * @param names names in {@code block.getParameters()}
         * @return this builder
         */
        public Builder optForceAdamW(String... names) {
            forceAdamW.addAll(java.util.Arrays.asList(Objects.requireNonNull(names, "forceAdamW must not be null")));
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
         * The step count a resumed run starts from, as DJL's own optimizers take it: the trackers continue at step
         * {@code value + 1}, and AdamW's bias correction counts from {@code value}, as DJL's {@code Adam} does. With
         * the optimizer's state saved ({@link MuonAdamW#save}), {@link MuonAdamW#load} restores the count with the
         * rest, and needs no begin count (one other than the checkpoint's is refused). Checked at {@link #build()}:
         * {@code >= 0}.
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
         * Builds the optimizer; with {@link #optBlock}, also binds it to the block: checks the override names, and
         * classifies the parameters now if they exist, else when the trainer creates them.
         *
         * @return the optimizer
         * @throws IllegalArgumentException for a setting muon-djl does not run (bfloat16, the SVD, GRAM or
         *                                  SYMMETRIC where the native kernels cannot run them),
         *                                  {@code optWeightDecays} or {@code optBeginNumUpdate} other than 0, an
         *                                  override that names no parameter or names one in both lists, or a
         *                                  classification that fails
         */
        public MuonAdamW build() {
            return new MuonAdamW(this);
        }
    }
}
