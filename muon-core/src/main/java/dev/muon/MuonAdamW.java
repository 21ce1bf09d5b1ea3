package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.ShardPlan;
import dev.muon.distributed.ShardingConfig;
import dev.muon.internal.NamedParameters;
import dev.muon.internal.NativeLifetime;
import dev.muon.internal.TorchNatives;
import dev.muon.schedule.ScheduleRecord;
import dev.muon.schedule.TrainingOptimizer;
import dev.muon.state.AssignmentChanges;
import dev.muon.state.CheckpointFile;
import dev.muon.state.FittedState;
import dev.muon.state.OptimizerState;
import dev.muon.state.StateFit;
import dev.muon.state.StateMismatchException;
import dev.muon.state.TorchStateFile;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * One optimizer for a whole model: Muon for the hidden weight matrices, libtorch's AdamW update for the rest
 * (its arithmetic bit for bit, without the temporaries libtorch's step allocates), built from the model's named
 * parameters. Which parameter goes where follows {@link Assignment}'s rules, can be overridden, and is printed by
 * {@link #assignment()}; a model with nothing on Muon is refused unless the user opts in.
 *
 * <p>Each step: check the gradients ({@link NonFinitePolicy}), then the Muon update of {@link Muon} on group
 * {@link #MUON_GROUP} and libtorch's AdamW update on group {@link #ADAMW_GROUP}, then count the step. Learning
 * rates are per group ({@link #setLr}); {@link dev.muon.schedule.LrScheduler} scales both from their base
 * values.
 *
 * <table>
 *   <caption>Defaults</caption>
 *   <tr><th>setting</th><th>default</th></tr>
 *   <tr><td>Muon group</td><td>{@link MuonConfig#defaults()}, conv filters flattened
 *   ({@link ConvWeights#FLATTEN}); a config given with {@link ConvWeights#REJECT} refuses a filter sent to Muon</td></tr>
 *   <tr><td>AdamW group</td><td>{@link AdamWConfig#defaults()} (libtorch's)</td></tr>
 *   <tr><td>assignment</td><td>{@link Assignment#defaultMuonRule()}, and the last matrix on AdamW as the output
 *   layer ({@link Builder#outputLayerOnAdamW(boolean)})</td></tr>
 *   <tr><td>AdamW weight decay</td><td>every AdamW parameter, as in PyTorch
 *   ({@link Builder#noWeightDecayBelow2D(boolean)})</td></tr>
 *   <tr><td>empty Muon group</td><td>refused</td></tr>
 *   <tr><td>non-finite gradients</td><td>{@link NonFinitePolicy#SKIP}</td></tr>
 *   <tr><td>row splits</td><td>none: each Muon parameter is orthogonalized whole
 *   ({@link Builder#rowSplit(String, RowSplit)})</td></tr>
 *   <tr><td>metrics</td><td>off</td></tr>
 *   <tr><td>QK-Clip</td><td>off ({@link Builder#qkClip})</td></tr>
 *   <tr><td>Muon state</td><td>beside its parameters ({@link Builder#muonStateStorage(StateStorage)})</td></tr>
 * </table>
 *
 * <p>Replacing libtorch's AdamW is one line; the AdamW hyperparameters carry over because the Muon side uses
 * {@link AdjustLr#MATCH_RMS_ADAMW}:
 * <pre>{@code
 * // AdamW optimizer = new AdamW(model.parameters(), new AdamWOptions(3e-4));
 * MuonAdamW optimizer = MuonAdamW.dropIn(model.named_parameters(), new AdamWOptions(3e-4));
 * for (...) {
 *     optimizer.zero_grad();
 *     loss(model, batch).backward();
 *     optimizer.step();
 * }
 * optimizer.save(Path.of("run.ckpt"));
 * }</pre>
 *
 * <p><b>Distributed.</b> Built with {@link Builder#distributed(DistributedGroup, ShardingConfig)}, the Muon
 * group is sharded over the ranks as in {@link Muon}: each rank keeps the momentum of the Muon parameters it owns
 * and runs their Newton–Schulz iterations, and the updated parameters are broadcast. The AdamW group is
 * replicated: every rank runs the AdamW update on all AdamW parameters with the same averaged gradients, because
 * its elementwise update costs about as much as the traffic that sharding it would add. Checkpoints keep the
 * single-process format and load into any number of ranks. See {@code docs/distributed.md}.
 *
 * <p>Not thread-safe.
 */
public final class MuonAdamW implements TrainingOptimizer, AutoCloseable {
    static {
        // Before anything here loads libtorch: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
    }

    /** The index of the Muon group in {@link #lr(int)} and {@link #setLr(int, double)}. */
    public static final int MUON_GROUP = 0;
    /** The index of the AdamW group in {@link #lr(int)} and {@link #setLr(int, double)}. */
    public static final int ADAMW_GROUP = 1;

    private static final System.Logger LOG = System.getLogger(MuonAdamW.class.getName());

    /** Which parameter goes where and why, aliases of tied weights included. */
    private final Assignment assignment;
    private final List<String> muonNames;
    private final List<Tensor> muonParams;
    /** The AdamW update over the AdamW parameters, with their moments. */
    private final AdamWGroup adamW;
    private final StepGradients gradients;
    private final boolean metrics;
    private final Set<String> orthogonalityNames;
    private final DistributedGroup group;
    private final ShardingConfig sharding;
    /** The QK-Clip hook run after each applied step, or null (the default: no clipping, no cost). */
    private final QkClip qkClip;

    private Muon muon;
    private MuonConfig muonConfig;
    private AdamWConfig adamWConfig;
    private long stepCount;
    private ScheduleRecord scheduleRecord;
    /** The state calls (save, load, restore, close, ...) and the lifecycle this optimizer shares with Muon. */
    private final StateCalls calls;
    /** Package-private so that a test can hold it while another thread calls in. */
    final SingleThreadGuard guard;
    /** Set by a step that failed part-way; refuses step and save until a restore. */
    private final PartialStep partial;
    private StepReport lastStep = new StepReport(0, false, Optional.empty(), List.of(), Map.of());
    /** Where the Muon group keeps its state ({@link Builder#muonStateStorage}), and the tests' seams. */
    private final StateStorage muonStorage;
    private final StatePlacement.Seams seams;

    private MuonAdamW(Builder b, MuonConfig muonConfig, Assignment assignment) {
        this.assignment = assignment;
        this.muonNames = assignment.names(OptimizerKind.MUON);
        this.muonParams = assignment.tensors(OptimizerKind.MUON);
        this.metrics = b.metrics;
        this.orthogonalityNames = Set.copyOf(b.orthogonalityNames);
        this.group = b.group;
        this.sharding = b.sharding;
        this.qkClip = b.qkClip;
        this.muonStorage = b.muonStorage;
        this.seams = b.seams;
        this.calls = new StateCalls("MuonAdamW", group, group == null ? null
                : "distributed over " + group.worldSize() + " ranks", LOG, d -> HybridState.withHint(assignment, d),
                this::captureState, this::stageFitted, () -> {
                    if (muon != null) {
                        muon.discardRestore();
                    }
                });
        this.guard = calls.guard;
        this.partial = calls.partial;
        this.muonConfig = muonConfig;
        this.adamWConfig = b.adamWConfig;
        this.muon = newMuon(muonConfig);
        this.adamW = new AdamWGroup(assignment);
        this.gradients = new StepGradients(assignment, adamW, b.nonFinitePolicy, group, sharding);
    }

    /**
     * Starts building from {@code module.named_parameters()}.
     *
     * @param namedParameters the model's parameters by name, in order
     * @return a builder
     * @throws NullPointerException if the argument is null
     */
    public static Builder builder(StringTensorDict namedParameters) {
        return new Builder(NamedParameters.ordered(namedParameters));
    }

    /**
     * Starts building from an ordered map of named parameters (use a {@link LinkedHashMap}: its order is the
     * order of the table and of the checkpoint).
     *
     * @param namedParameters the parameters by name
     * @return a builder
     * @throws NullPointerException if the argument is null
     */
    public static Builder builder(Map<String, Tensor> namedParameters) {
        Objects.requireNonNull(namedParameters, "namedParameters must not be null");
        return new Builder(new LinkedHashMap<>(namedParameters));
    }

    /**
     * The one-line replacement of libtorch's AdamW: AdamW keeps the given hyperparameters, and Muon takes the same
     * lr and weight decay with {@link AdjustLr#MATCH_RMS_ADAMW}, which gives its updates the RMS of AdamW's so
     * that tuned values carry over (Moonlight, arXiv:2502.16982).
     *
     * @param namedParameters {@code module.named_parameters()}
     * @param options         the options the user's {@code AdamW} had
     * @return the optimizer
     * @throws IllegalArgumentException if an option is invalid, AMSGrad is on, or no parameter goes to Muon
     */
    public static MuonAdamW dropIn(StringTensorDict namedParameters, AdamWOptions options) {
        Objects.requireNonNull(options, "options must not be null");
        AdamWConfig config = AdamWConfig.of(options);
        return dropIn(namedParameters, config);
    }

    /**
     * {@link #dropIn(StringTensorDict, AdamWOptions)} with the hyperparameters as a config.
     *
     * @param namedParameters {@code module.named_parameters()}
     * @param adamW           the AdamW hyperparameters the user tuned
     * @return the optimizer
     * @throws IllegalArgumentException if no parameter goes to Muon
     */
    public static MuonAdamW dropIn(StringTensorDict namedParameters, AdamWConfig adamW) {
        Objects.requireNonNull(adamW, "adamW must not be null");
        return builder(namedParameters).adamW(adamW).muon(dropInMuonConfig(adamW)).build();
    }

    /** The Muon side of the drop-in ({@link MuonConfig#dropIn}), which muon-djl's drop-in shares. */
    static MuonConfig dropInMuonConfig(AdamWConfig adamW) {
        return MuonConfig.dropIn(adamW.lr(), adamW.weightDecay());
    }

    /**
     * The last step of a build, once every rank has agreed: its Muon's build-time changes to the parameters
     * ({@link Muon#started()}); before it, a refused build has changed nothing.
     */
    private MuonAdamW started() {
        if (muon != null) {
            muon.started();
        }
        return this;
    }

    private Muon newMuon(MuonConfig config) {
        if (muonParams.isEmpty()) {
            return null;
        }
        Muon.Builder builder = Muon.builder().addGroup(muonParams, config).names(muonNames)
                .stateStorage(muonStorage).startedByOwner();
        if (seams.cpuAsAccelerator() != null) {
            builder.cpuAsAccelerator(seams.cpuAsAccelerator());
        }
        builder.stateDisk(seams.disk());
        for (int i = 0; i < muonParams.size(); i++) {
            RowSplit split = assignment.rowSplit(muonNames.get(i));
            if (split != null) {
                builder.rowSplit(muonParams.get(i), split);
            }
        }
        if (group == null) {
            return builder.build();
        }
        // This optimizer averages every gradient itself and has checked its peers once at build: its Muon does
        // neither, and a restored Muon keeps the plan of the one it replaces.
        return builder.distributed(group, sharding.withAverageGradients(false))
                .withoutAgreement(muon == null ? null : muon.shardPlan().orElse(null))
                .build();
    }

    /**
     * One step of both groups, after the gradient check of the {@link NonFinitePolicy}.
     *
     * <p>Every gradient is checked before any parameter changes, so a call that throws for a gradient changes
     * nothing. A step in which no parameter has a gradient changes nothing and is not counted
     * ({@link StepReport#skipped()} is true, with no parameter named), so that schedules keyed to
     * {@link #stepCount()} do not advance on nothing. A failure after the first parameter changed (out of memory, a
     * lost rank) is rethrown and leaves the optimizer part-way through the step: {@code step}, {@code save},
     * {@code state} and {@code exportTorchStateDict} then throw {@link IllegalStateException} until {@link #load}
     * or {@link #restore} (docs/api.md, "When a step fails part-way").
     *
     * @throws IllegalStateException         under {@link NonFinitePolicy#RAISE} if a gradient is not finite; if a
     *                                       gradient's shape, dtype or device differs from its parameter's; if
     *                                       another thread is inside this optimizer's {@code step()},
     *                                       {@code save()} or {@code load()} (the optimizer is not thread-safe); or
     *                                       if an earlier step failed part-way
     * @throws UnsupportedOperationException if a gradient is sparse or complex
     */
    @Override
    public void step() {
        try (SingleThreadGuard.Entered entered = guard.enter("step");
             PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            calls.requireOpen("step");
            partial.requireWhole("step");
            StepGradients.Screened grads = gradients.screen();
            if (grads.skipped()) {
                if (grads.nonFinite() != null) {
                    LOG.log(System.Logger.Level.WARNING, "MuonAdamW: step " + (stepCount + 1) + " skipped: "
                            + grads.nonFinite() + " holds NaN or Inf");
                }
                lastStep = new StepReport(stepCount, true, Optional.ofNullable(grads.parameter()), List.of(),
                        Map.of());
                return;
            }
            StepMeter meter = metrics || !orthogonalityNames.isEmpty()
                    ? new StepMeter(metrics, orthogonalityNames, new StepMeter.Group(muonNames, muonParams),
                    new StepMeter.Group(adamW.names, adamW.params), muonConfig, adamWConfig)
                    : null;
            if (muon != null) {
                muon.checkStateBeforeStep();
                // Outside the part that may leave the optimizer part-way: a refusal here changes nothing.
                muon.prepareStep(grads.muon());
            }
            partial.run(stepCount + 1, () -> {
                if (muon != null) {
                    // Checked above, once: Muon's own check would read every gradient again.
                    muon.stepPrepared(grads.muon());
                }
                adamW.step(grads.adamW(), adamWConfig);
                if (qkClip != null) {
                    qkClip.afterStep(group);
                }
                stepCount++;
            });
            lastStep = meter == null
                    ? new StepReport(stepCount, false, Optional.empty(), List.of(), Map.of())
                    : meter.finish(stepCount, new StepMeter.StateLookup(
                            p -> muon == null ? Optional.empty() : muon.momentumBuffer(p),
                            p -> muon.appliedLr(p), adamW::moments));
        }
    }

    /** Clears every gradient of both groups (sets it to undefined, as libtorch's {@code zero_grad()} does). */
    @Override
    public void zeroGrad() {
        try (PointerScope scope = new PointerScope()) {
            for (List<Tensor> params : List.of(muonParams, adamW.params)) {
                for (Tensor p : params) {
                    Tensor grad = p.mutable_grad();
                    if (grad.defined()) {
                        grad.put(new Tensor());
                    }
                }
            }
        }
    }

    /**
     * {@link #zeroGrad()} under libtorch's name, so that a training loop written for libtorch's {@code AdamW}
     * compiles unchanged.
     */
    public void zero_grad() {
        zeroGrad();
    }

    /**
     * Always 2: {@link #MUON_GROUP} and {@link #ADAMW_GROUP} (either may hold no parameters).
     *
     * @return 2
     */
    @Override
    public int groupCount() {
        return 2;
    }

    /**
     * The current lr of a group.
     *
     * @param group {@link #MUON_GROUP} or {@link #ADAMW_GROUP}
     * @return the lr (for Muon, before the shape adjustment)
     * @throws IllegalArgumentException if the index is neither
     */
    @Override
    public double lr(int group) {
        checkGroup(group);
        return group == MUON_GROUP ? muonConfig.lr() : adamWConfig.lr();
    }

    /**
     * Sets a group's lr for the following steps.
     *
     * @param group {@link #MUON_GROUP} or {@link #ADAMW_GROUP}
     * @param lr    the new lr, finite and {@code >= 0}
     * @throws IllegalArgumentException if the index or the lr is invalid; nothing changes then
     */
    @Override
    public void setLr(int group, double lr) {
        checkGroup(group);
        if (group == MUON_GROUP) {
            MuonConfig next = muonConfig.withLr(lr);
            if (muon != null) {
                muon.setLr(0, lr);
            }
            muonConfig = next;
        } else {
            adamWConfig = adamWConfig.withLr(lr);
        }
    }

    private static void checkGroup(int group) {
        if (group != MUON_GROUP && group != ADAMW_GROUP) {
            throw new IllegalArgumentException("group must be 0 (Muon) or 1 (AdamW), got " + group);
        }
    }

    /**
     * The Muon group's current configuration.
     *
     * @return the config (its lr reflects {@link #setLr})
     */
    public MuonConfig muonConfig() {
        return muonConfig;
    }

    /**
     * The AdamW group's current configuration.
     *
     * @return the config (its lr reflects {@link #setLr})
     */
    public AdamWConfig adamWConfig() {
        return adamWConfig;
    }

    /**
     * The number of steps applied so far (skipped steps not counted); restored by {@link #load(Path)}. Schedules
     * take it as their clock.
     *
     * @return the step count
     */
    public long stepCount() {
        return stepCount;
    }

    /**
     * What the last {@link #step()} did, with metrics when they are on.
     *
     * @return the report; before the first step, an empty report of step 0
     */
    public StepReport lastStep() {
        return lastStep;
    }

    /**
     * The assignment table with the current lrs.
     *
     * @return which parameter goes where, and why
     */
    public Assignment assignment() {
        return assignment.at(muonConfig, adamWConfig);
    }

    /**
     * A read-only copy of a Muon parameter's state: its momentum buffer and the scaled lr of its last update.
     *
     * @param name a Muon parameter's name (as in {@link #assignment()})
     * @return the state; empty before the parameter's first update, and, distributed, on the ranks that do not
     *         own it. Its lr is NaN until the parameter's first update since this optimizer was built or loaded (a
     *         checkpoint holds the momentum, not the lr of the last update)
     * @throws IllegalArgumentException if {@code name} is not a Muon parameter of this optimizer
     */
    public Optional<MuonState> muonState(String name) {
        calls.requireOpen("muonState");
        int i = indexOf(muonNames, name, "Muon");
        if (muon == null) {
            return Optional.empty();
        }
        return muon.momentumBuffer(muonParams.get(i))
                .map(b -> new MuonState(NativeLifetime.outliveScope(b.detach().clone()), muon.appliedLr(i)));
    }

    /**
     * A read-only copy of an AdamW parameter's state: libtorch AdamW's moments and step count, and the lr of its
     * last update (before bias correction). Each call reads AdamW's whole state through a serialization round
     * trip: fine for logs and tests, not for every step of a large model.
     *
     * @param name an AdamW parameter's name (as in {@link #assignment()}; a tied alias by its first name)
     * @return the state; empty before the parameter's first update. Its lr is NaN until the parameter's first
     *         update since this optimizer was built or loaded
     * @throws IllegalArgumentException if {@code name} is not an AdamW parameter of this optimizer
     */
    public Optional<AdamWState> adamWState(String name) {
        return adamW.state(indexOf(adamW.names, name, "AdamW"));
    }

    private static int indexOf(List<String> names, String name, String optimizer) {
        Objects.requireNonNull(name, "name must not be null");
        int i = names.indexOf(name);
        if (i < 0) {
            throw new IllegalArgumentException("name must be a parameter on " + optimizer + "; '" + name
                    + "' is not (" + optimizer + " parameters are " + names + ")");
        }
        return i;
    }

    /**
     * Saves both groups' state, the step count, both configs, the parameters, the assignment and the schedule
     * record to one file, muon-core's checkpoint format ({@link CheckpointFile}, see {@code docs/checkpoints.md}):
     * written next to {@code path}, checksummed, forced to disk and renamed over it, so a crash leaves the previous
     * file intact. Distributed, a collective: rank 0 writes, with every owner's momentum.
     *
     * @param path where to save
     * @throws java.io.UncheckedIOException if the file cannot be written; {@code path} is then unchanged
     * @throws IllegalStateException        if another thread is inside this optimizer
     */
    public void save(Path path) {
        calls.save(path);
    }

    /**
     * Restores a checkpoint saved by {@link #save(Path)}: reads it ({@link CheckpointFile}, which runs nothing from
     * the file and checks every byte's place first), then {@link #restore(OptimizerState)}. Distributed, every rank
     * reads, and the ranks agree that they read the same content first; a checkpoint loads into any number of
     * ranks.
     *
     * @param path the checkpoint
     * @throws dev.muon.state.StateFileException     if the file is missing, truncated, corrupt or malformed
     * @throws dev.muon.state.StateMismatchException if it does not fit this optimizer (listing every difference)
     * @throws IllegalStateException                 if another thread is inside this optimizer; in every case
     *                                               nothing changes
     */
    public void load(Path path) {
        load(path, AssignmentChanges.REFUSE);
    }

    /**
     * {@link #load(Path)}, saying what to do with parameters whose place changed since the checkpoint was saved (a
     * parameter moved between Muon and AdamW, one that appeared, a tied weight that was split):
     * {@link AssignmentChanges#START_FRESH} restores every parameter that still fits bit for bit and starts the
     * others afresh, naming each in one INFO line ({@link #restore(OptimizerState, AssignmentChanges)}).
     *
     * @param path    the checkpoint
     * @param changes what to do with parameters whose place changed
     * @throws dev.muon.state.StateFileException     if the file is missing, truncated, corrupt or malformed
     * @throws dev.muon.state.StateMismatchException if it does not fit this optimizer, even so (listing every
     *                                               difference)
     * @throws IllegalStateException                 if another thread is inside this optimizer; in every case
     *                                               nothing changes
     */
    public void load(Path path, AssignmentChanges changes) {
        calls.load(path, changes);
    }

    /**
     * This optimizer's state: the step count, both configs, the schedule record, and per named parameter (in the
     * order of {@link #assignment()}, tied names included) its value, Muon's momentum buffer and NorMuon second
     * moment or AdamW's moments: copies the caller owns. Distributed, a collective: only rank 0's state holds every
     * owner's momentum.
     *
     * @return the state
     * @throws IllegalStateException if another thread is inside this optimizer
     */
    public OptimizerState state() {
        return calls.state();
    }

    /**
     * Restores a state, as {@link Muon#restore(OptimizerState)} does: checks that it fits ({@link StateFit}: the
     * same named parameters on the same optimizers and groups, shapes, dtypes, ties and row splits, the same Muon
     * build settings, buffers where they belong with values the math allows), then copies the parameter values and
     * buffers in and takes the step count, the schedule record, Muon's hyperparameters and AdamW's. Distributed,
     * every rank restores the same state and keeps the Muon buffers of the parameters it owns.
     *
     * @param state the state
     * @throws dev.muon.state.StateMismatchException if it does not fit, listing every difference (with a hint where
     *                                               a builder setting explains it); nothing changes
     * @throws IllegalStateException                 if another thread is inside this optimizer; nothing changes
     */
    public void restore(OptimizerState state) {
        restore(state, AssignmentChanges.REFUSE);
    }

    /**
     * {@link #restore(OptimizerState)}, saying what to do with parameters whose place changed since the state was
     * taken. Under {@link AssignmentChanges#START_FRESH}: every parameter whose entry is unchanged is restored bit
     * for bit; one that moved between Muon and AdamW (or to the other AdamW group) gets the state's value and
     * starts with no momentum or moments; one the state does not hold (new, or the second name of a tied weight
     * that was split) keeps its value and starts afresh; a name now tied to another drops its saved state. One
     * INFO line of this class's logger names each. A parameter of the state that this optimizer does not have, or
     * has with another shape or dtype, is still refused.
     *
     * @param state   the state
     * @param changes what to do with parameters whose place changed
     * @throws dev.muon.state.StateMismatchException if it does not fit, even so, listing every difference; nothing
     *                                               changes
     * @throws IllegalStateException                 if another thread is inside this optimizer; nothing changes
     */
    public void restore(OptimizerState state, AssignmentChanges changes) {
        calls.restore(state, changes);
    }

    /**
     * Exports the optimizer state in PyTorch's terms ({@link TorchStateFile}): one file that Python reads with
     * {@code torch.load(path, weights_only=True)}, holding a {@code torch.optim.Muon} state dict (key
     * {@code "muon"}) and a {@code torch.optim.AdamW} state dict (key {@code "adamw"}) over one parameter index
     * space, with the names by index ({@code "param_names"}, {@code named_parameters()} order, tied names left
     * out). Written next to {@code path} and renamed over it. See {@code docs/checkpoints.md}.
     *
     * @param path where to write
     * @throws IllegalStateException         if the Muon config has no {@code torch.optim.Muon} equivalent (a per-step
     *                                       coefficient schedule, {@code adjustLr} other than {@code ORIGINAL} or
     *                                       {@code MATCH_RMS_ADAMW}, {@code extraScale} other than 1), or another
     *                                       thread is inside this optimizer; nothing is written
     * @throws UnsupportedOperationException if the optimizer is distributed
     * @throws java.io.UncheckedIOException  if the file cannot be written; {@code path} is then unchanged
     */
    public void exportTorchStateDict(Path path) {
        calls.exportTorchStateDict(path);
    }

    /**
     * Imports a file of the layout {@link #exportTorchStateDict(Path)} writes, from Python too, read without running
     * anything from it ({@link TorchStateFile}), then {@link #restore(OptimizerState)}: the Muon momentum buffers,
     * AdamW's moments and step counts, the step count and both groups' hyperparameters; {@code ns_coefficients},
     * {@code ns_steps} and {@code eps} decided how this optimizer was built and must be its own. The parameter
     * values are not in the file and stay as they are.
     *
     * @param path the file
     * @throws dev.muon.state.StateFileException     if the file is missing, malformed, or does not fit this
     *                                               optimizer's parameters (naming the key and the rule)
     * @throws dev.muon.state.StateMismatchException if its settings or values do not fit (listing every difference)
     * @throws UnsupportedOperationException         if the optimizer is distributed; in every case nothing changes
     */
    public void importTorchStateDict(Path path) {
        calls.importTorchStateDict(path);
    }

    /** The policy for NaN and Inf gradients this optimizer was built with. */
    NonFinitePolicy nonFinitePolicy() {
        return gradients.policy();
    }

    /** Whether a step averages the gradients over ranks first: distributed, with peers and averaging on. */
    boolean averagesGradients() {
        return group != null && group.worldSize() > 1 && sharding.averageGradients();
    }

    /**
     * Releases the optimizer's state ({@link Muon#close()}): the Muon group's state files are removed, its host and
     * device buffers freed. Afterwards every call that uses the state ({@code step}, {@code save}, {@code load},
     * {@code state}, {@code restore}, the PyTorch-state files, {@code muonState}) throws
     * {@link IllegalStateException}; a second {@code close()} does nothing. The parameters stay as they are.
     *
     * @throws IllegalStateException if another thread is inside this optimizer
     */
    @Override
    public void close() {
        calls.close(() -> {
            if (muon != null) {
                muon.close();
            }
        });
    }

    /**
     * This optimizer's state, one entry per named parameter in the assignment's order ({@link HybridState}). With
     * tensors, distributed, a collective (Muon's owners send their momentum to rank 0).
     */
    private OptimizerState captureState(StateCapture capture) {
        return HybridState.capture(assignment, muon == null ? null : muon.captureState(capture),
                capture == StateCapture.NONE ? Map.of() : adamW.moments(), capture, stepCount, muonConfig,
                adamWConfig, scheduleRecord);
    }

    /**
     * Stages the restore of a state fitted to this optimizer ({@link StateCalls}, with this builder's hints): copies
     * its AdamW moments and stores the Muon state kept away from its parameters, distributed on every
     * rank before any changes anything, and returns what then changes everything: the Muon part in place, the AdamW
     * moments swapped in, the configs, counters and schedule record taken.
     */
    private Runnable stageFitted(FittedState fitted, String source) {
        AdamWGroup.Moments fresh = adamW.withMoments(fitted.state());
        OptimizerState muonPart = muon == null ? null : HybridState.muonPart(fitted.state());
        if (muon != null) {
            muon.stageRestore(muonPart);
        }
        return () -> {
            OptimizerState candidate = fitted.state();
            if (muon != null) {
                muon.applyChecked(muonPart);
            }
            adamW.use(fresh, candidate);
            muonConfig = candidate.muonConfigs().get(0);
            if (candidate.adamWConfig() != null) {
                adamWConfig = candidate.adamWConfig();
            }
            stepCount = candidate.step();
            partial.clear();
            scheduleRecord = ScheduleRecords.afterLoad(candidate.schedule(), scheduleRecord,
                    new double[]{muonConfig.lr(), adamWConfig.lr()}, source);
            lastStep = new StepReport(stepCount, false, Optional.empty(), List.of(), Map.of());
        };
    }

    /**
     * The schedule record: each group's base lr and the schedule, recorded by the first
     * {@link dev.muon.schedule.LrScheduler} made for this optimizer, saved by {@link #save(Path)} and restored
     * by {@link #load(Path)}.
     *
     * @return the record, if a scheduler made one or a load restored one
     */
    @Override
    public Optional<ScheduleRecord> scheduleRecord() {
        return Optional.ofNullable(scheduleRecord);
    }

    /**
     * Keeps a schedule record (see {@link dev.muon.schedule.LrScheduler}).
     *
     * @param record one base lr per group (2)
     * @throws IllegalArgumentException if it does not hold 2 base lrs
     */
    @Override
    public void recordSchedule(ScheduleRecord record) {
        scheduleRecord = ScheduleRecords.checked(record, groupCount());
    }

    /**
     * The shard plan of a distributed optimizer's Muon group: which rank owns which Muon parameter (in the order
     * of the assignment table), and the load-balance figure.
     *
     * @return the plan; empty for a single-process optimizer or an empty Muon group
     */
    public Optional<ShardPlan> shardPlan() {
        return muon == null ? Optional.empty() : muon.shardPlan();
    }

    /**
     * The bytes of Muon momentum (and, with NorMuon, of its per-row second moments) this process holds: all of it
     * in a single process, this rank's share when distributed. AdamW's state is not included (see
     * {@link Assignment#stateBytes()} for the whole model).
     *
     * @return bytes
     */
    public long muonStateBytes() {
        return muon == null ? 0 : muon.stateBytes();
    }

    /**
     * Collects the named parameters and the settings; {@link #build()} classifies and validates them all at once.
     */
    public static final class Builder {
        private final Map<String, Tensor> named;
        private MuonConfig muonConfig = MuonConfig.defaults().withConvWeights(ConvWeights.FLATTEN);
        private AdamWConfig adamWConfig = AdamWConfig.defaults();
        private BiPredicate<String, Tensor> muonRule = Assignment.defaultMuonRule();
        private boolean customRule;
        private final Set<String> forceMuon = new LinkedHashSet<>();
        private final Set<String> forceAdamW = new LinkedHashSet<>();
        private boolean allowEmptyMuon;
        private NonFinitePolicy nonFinitePolicy = NonFinitePolicy.SKIP;
        private boolean metrics;
        private final Set<String> orthogonalityNames = new LinkedHashSet<>();
        private DistributedGroup group;
        private ShardingConfig sharding;
        private boolean outputLayerOnAdamW = true;
        private boolean noWeightDecayBelow2D;
        private QkClip qkClip;
        private final List<Map.Entry<String, RowSplit>> rowSplits = new ArrayList<>();
        private final List<Map.Entry<BiPredicate<String, Tensor>, RowSplit>> rowSplitRules = new ArrayList<>();
        private StateStorage muonStorage = StateStorage.withParameter();
        private StatePlacement.Seams seams = StatePlacement.Seams.NONE;

        private Builder(Map<String, Tensor> named) {
            this.named = named;
        }

        /**
         * Where the Muon group keeps its state buffers between updates (see {@link StateStorage});
         * {@link StateStorage#withParameter()} by default. AdamW's moments stay in memory.
         * {@link #build()} refuses a storage that cannot serve a Muon parameter, and a directory that cannot hold the
         * files, naming it.
         *
         * @param storage where
         * @return this builder
         * @throws NullPointerException if {@code storage} is null
         */
        public Builder muonStateStorage(StateStorage storage) {
            this.muonStorage = Objects.requireNonNull(storage, "muonStateStorage must not be null");
            return this;
        }

        /** For tests: see {@link Muon.Builder#cpuAsAccelerator}. */
        Builder cpuAsAccelerator(DeviceTransfers transfers) {
            this.seams = new StatePlacement.Seams(Objects.requireNonNull(transfers, "transfers must not be null"),
                    seams.disk());
            return this;
        }

        /**
         * Runs QK-Clip after every applied step (a skipped step keeps the reports for the next one): the heads
         * of the hook's layers whose reported logits exceeded its {@code τ} are rescaled (see {@link QkClip}). Off
         * unless called. {@link #build()} checks that every tensor the hook names is a trainable parameter.
         *
         * @param clip the hook
         * @return this builder
         */
        public Builder qkClip(QkClip clip) {
            this.qkClip = Objects.requireNonNull(clip, "qkClip must not be null");
            return this;
        }

        /**
         * Trains data-parallel over {@code group}: the Muon group is sharded across the ranks, the AdamW group is
         * replicated, and gradients are averaged unless {@code config} says otherwise. Every rank must build its
         * optimizer from the same model and settings; {@link #build()} checks that with one exchange.
         *
         * @param distributedGroup the group this process has joined
         * @param config           how to shard
         * @return this builder
         */
        public Builder distributed(DistributedGroup distributedGroup, ShardingConfig config) {
            this.group = Objects.requireNonNull(distributedGroup, "group must not be null");
            this.sharding = Objects.requireNonNull(config, "sharding config must not be null");
            return this;
        }

        /**
         * The Muon group's hyperparameters, in place of {@link MuonConfig#defaults()} with conv filters flattened.
         * Its {@code convWeights} is honoured: with {@link ConvWeights#REJECT}, {@link #build()} refuses a 4-D
         * filter that the rules send to Muon, naming it and the two ways out (flatten, or
         * {@link #forceAdamW}); with no filter on Muon the setting changes nothing, and the optimizer's config then
         * reads {@link ConvWeights#FLATTEN} as it always has (checkpoints compare it).
         *
         * @param config the config
         * @return this builder
         */
        public Builder muon(MuonConfig config) {
            this.muonConfig = Objects.requireNonNull(config, "muon config must not be null");
            return this;
        }

        /**
         * The AdamW group's hyperparameters.
         *
         * @param config the config
         * @return this builder
         */
        public Builder adamW(AdamWConfig config) {
            this.adamWConfig = Objects.requireNonNull(config, "adamW config must not be null");
            return this;
        }

        /**
         * Replaces the default rule: a parameter goes to Muon exactly when {@code rule} is true for it (the name
         * lists still win). Compose with {@link Assignment#defaultMuonRule()} to refine rather than replace.
         *
         * @param rule a predicate on (name, tensor)
         * @return this builder
         */
        public Builder muonWhen(BiPredicate<String, Tensor> rule) {
            this.muonRule = Objects.requireNonNull(rule, "rule must not be null");
            this.customRule = true;
            return this;
        }

        /**
         * Sends these parameters to Muon whatever the rule says.
         *
         * @param names parameter names
         * @return this builder
         */
        public Builder forceMuon(String... names) {
            forceMuon.addAll(Arrays.asList(names));
            return this;
        }

        /**
         * Sends these parameters to AdamW whatever the rule says.
         *
         * @param names parameter names
         * @return this builder
         */
        public Builder forceAdamW(String... names) {
            forceAdamW.addAll(Arrays.asList(names));
            return this;
        }

        /**
         * Whether the output layer (the last 2-D parameter in registration order) goes to AdamW when no name
         * marks a head: on by default, as in every Muon reference. The exceptions are listed in
         * {@link Assignment}; a {@link #muonWhen} rule decides alone, and {@link #forceMuon} of the last matrix wins.
         * Turn it off to keep the assignment of releases before the rule, for example to load a checkpoint saved
         * with the output layer on Muon.
         *
         * @param on whether the rule applies
         * @return this builder
         */
        public Builder outputLayerOnAdamW(boolean on) {
            this.outputLayerOnAdamW = on;
            return this;
        }

        /**
         * Gives the AdamW parameters with fewer than 2 dims (biases, norm gains, scalars) no weight decay, as
         * nanoGPT does, through a second libtorch AdamW parameter group; matrices, embeddings among them, keep the
         * AdamW config's decay. Off by default: libtorch's and PyTorch's {@code AdamW} decay every parameter, and
         * {@link MuonAdamW#dropIn(StringTensorDict, AdamWOptions)} must behave like the
         * optimizer it replaces. A checkpoint holds both groups and loads
         * only into an optimizer built with the same setting.
         *
         * @param on whether 1-D and 0-D AdamW parameters skip weight decay
         * @return this builder
         */
        public Builder noWeightDecayBelow2D(boolean on) {
            this.noWeightDecayBelow2D = on;
            return this;
        }

        /**
         * Orthogonalizes the Muon parameter {@code name} in row blocks (see {@link RowSplit}): a fused QKV weight
         * as its three projections, or {@code W_q} per head. A rule set here wins over {@link #rowSplitWhen};
         * {@link #build()} checks that {@code name} is a Muon parameter and that the blocks cover its rows, and the
         * assignment table and checkpoints record the rule.
         *
         * @param name  a parameter name
         * @param split the rule
         * @return this builder
         * @throws NullPointerException if an argument is null
         */
        public Builder rowSplit(String name, RowSplit split) {
            Objects.requireNonNull(name, "name must not be null");
            Objects.requireNonNull(split, "split must not be null");
            rowSplits.add(Map.entry(name, split));
            return this;
        }

        /**
         * Orthogonalizes in row blocks every Muon parameter for which {@code rule} holds and that no
         * {@link #rowSplit(String, RowSplit)} names (AdamW parameters are never split, whatever the rule says);
         * when several rules hold, the first one added wins. {@link #build()} checks that the blocks cover the rows
         * of every parameter the rule selects.
         *
         * @param rule  a predicate on (name, tensor)
         * @param split the rule's split
         * @return this builder
         * @throws NullPointerException if an argument is null
         */
        public Builder rowSplitWhen(BiPredicate<String, Tensor> rule, RowSplit split) {
            Objects.requireNonNull(rule, "rule must not be null");
            Objects.requireNonNull(split, "split must not be null");
            rowSplitRules.add(Map.entry(rule, split));
            return this;
        }

        /**
         * Accepts a Muon group with no parameters (the optimizer is then plain AdamW). Off by default, because an
         * empty Muon group is almost always a naming mistake.
         *
         * @param allow whether to accept it
         * @return this builder
         */
        public Builder allowEmptyMuon(boolean allow) {
            this.allowEmptyMuon = allow;
            return this;
        }

        /**
         * What a step does with NaN or Inf gradients.
         *
         * @param policy the policy (default {@link NonFinitePolicy#SKIP})
         * @return this builder
         */
        public Builder nonFinitePolicy(NonFinitePolicy policy) {
            this.nonFinitePolicy = Objects.requireNonNull(policy, "nonFinitePolicy must not be null");
            return this;
        }

        /**
         * Turns per-group step metrics on or off ({@link StepReport#groups()}). Off costs nothing; on costs a copy
         * of the parameters, a few reductions and, for AdamW's moment norm, a serialization of its state per step.
         *
         * @param on whether to measure
         * @return this builder
         */
        public Builder metrics(boolean on) {
            this.metrics = on;
            return this;
        }

        /**
         * Measures {@code ‖OᵀO − I‖_F} of the Newton–Schulz output of these Muon parameters at every step.
         *
         * @param names Muon parameter names
         * @return this builder
         */
        public Builder orthogonalityErrorFor(String... names) {
            orthogonalityNames.addAll(Arrays.asList(names));
            return this;
        }

        /**
         * Classifies the parameters, validates everything, logs the assignment table and creates the optimizer.
         *
         * @return the optimizer
         * @throws IllegalArgumentException if a name is in both override lists, an override or an
         *                                  orthogonality name names no trainable parameter (or one on AdamW),
         *                                  a tied weight is forced to Muon, Muon cannot take a parameter sent to
         *                                  it, there are no trainable parameters, the Muon group is empty and
         *                                  {@link #allowEmptyMuon(boolean)} was not set, or a row split names no
         *                                  Muon parameter or does not fit its parameter's rows; or if the
         *                                  {@link #qkClip} hook names a tensor that is not a trainable parameter
         * @throws IllegalStateException    distributed, if another rank failed to build or built from another
         *                                  model or other settings, or the ranks cannot reach each other
         */
        public MuonAdamW build() {
            if (group == null) {
                return buildLocal().started();
            }
            // Everything that changes what a step does on a rank, or which collectives it runs, is compared. A rank
            // whose build succeeded while another's failed lets go of what it opened (a state file).
            MuonAdamW[] built = new MuonAdamW[1];
            try {
                return group.agree("MuonAdamW parameter lists and settings", () -> built[0] = buildLocal(),
                        o -> "world=" + group.worldSize() + " " + sharding + " nonFinitePolicy=" + nonFinitePolicy
                                + " noWeightDecayBelow2D=" + noWeightDecayBelow2D
                                + "\n" + o.muonConfig() + "\n" + o.adamWConfig()
                                + "\n" + o.assignment.layoutText()
                                + (o.qkClip == null ? "" : "\n" + o.qkClip.fingerprint())).started();
            } catch (RuntimeException | Error e) {
                if (built[0] != null) {
                    built[0].close();
                }
                throw e;
            }
        }

        private MuonAdamW buildLocal() {
            // The config as given decides what Muon takes (REJECT refuses a filter sent to Muon); once that is
            // checked, FLATTEN and REJECT differ in nothing, and the optimizer keeps FLATTEN, as files written
            // before this check hold it.
            MuonConfig muon = muonConfig.withConvWeights(ConvWeights.FLATTEN);
            Assignment classified = Assignment.classify(named,
                    new Assignment.Rules(muonRule, customRule, forceMuon, forceAdamW, orthogonalityNames,
                            outputLayerOnAdamW, noWeightDecayBelow2D), muonConfig,
                    adamWConfig).at(muon, adamWConfig);
            if (!rowSplits.isEmpty() || !rowSplitRules.isEmpty()) {
                classified = classified.withRowSplits(RowSplitRules.resolve(classified, rowSplits, rowSplitRules,
                        muon), muon, adamWConfig);
            }
            if (qkClip != null) {
                List<Tensor> trainable = new ArrayList<>(classified.tensors(OptimizerKind.MUON));
                trainable.addAll(classified.tensors(OptimizerKind.ADAMW));
                qkClip.requireParametersOf(QkClip.identities(trainable), "MuonAdamW");
                if (muon.muown() != null) {
                    qkClip.refuseMuown(QkClip.identities(classified.tensors(OptimizerKind.MUON)));
                }
            }
            MuonAdamW optimizer = new MuonAdamW(this, muon, classified);
            classified.requireMuon(allowEmptyMuon);
            LOG.log(System.Logger.Level.INFO, "MuonAdamW parameter assignment:\n" + optimizer.assignment());
            return optimizer;
        }
    }
}
