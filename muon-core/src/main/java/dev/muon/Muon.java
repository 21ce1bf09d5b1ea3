package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.distributed.GradientAveraging;
import dev.muon.distributed.ShardPlan;
import dev.muon.distributed.ShardingConfig;
import dev.muon.internal.NativeLifetime;
import dev.muon.internal.TorchNatives;
import dev.muon.internal.FusedUpdateKernels;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.Orthogonalizer;
import dev.muon.schedule.ScheduleRecord;
import dev.muon.schedule.TrainingOptimizer;
import dev.muon.state.AssignmentChanges;
import dev.muon.state.CheckpointFile;
import dev.muon.state.FittedState;
import dev.muon.state.OptimizerState;
import dev.muon.state.StateFit;
import dev.muon.state.TorchStateFile;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.IntPredicate;

/**
 * Muon: momentum orthogonalized by Newton–Schulz, for 2-D hidden weights (and, when configured, flattened conv
 * filters and stacks of expert matrices). The semantics are those of PyTorch's {@code torch.optim.Muon}.
 *
 * <p>For each parameter {@code p} with gradient {@code g} and momentum buffer {@code B} (zero at first):
 * <pre>
 *   B = μ·B + (1 − μ)·g                       (EMA momentum: B.lerp(g, 1 − μ))
 *   U = g.lerp(B, μ)  if nesterov, else B
 *   O = NS(U)                                  (Newton–Schulz, see {@link dev.muon.orthogonalize.NewtonSchulz})
 *   p = p·(1 − lr·weightDecay)                 (decoupled, with the unadjusted lr)
 *   p = p − lr·ratio(rows, cols)·extraScale·O  (ratio from {@link AdjustLr})
 * </pre>
 * Parameters whose gradient is undefined are skipped entirely: no momentum update and no decay.
 *
 * <p><b>NorMuon.</b> With {@link MuonConfig#withNorMuon(NorMuonConfig)}, {@code O} is normalized row by row by a
 * running second moment, one vector of {@code rows} per parameter (float32, float64 for float64 parameters), and
 * the update gets RMS {@code 0.2·lr·extraScale} (Li et al., arXiv 2510.05491, Algorithm 1; see
 * {@link NorMuonConfig}). It applies on every path (single, same-shape batches, 3-D stacks, conv filters, row
 * blocks, where each block's rows are normalized with their part of the second moment); the fused device update
 * stage is not used for it. Distributed, each parameter's owner keeps its second moment, gathered to rank 0 for a
 * checkpoint like the momentum.
 *
 * <p>Defaults are PyTorch's; see {@link MuonConfig}. Example:
 * <pre>{@code
 * Muon muon = Muon.of(model.parameters(), MuonConfig.defaults().withLr(0.02));
 * for (...) {
 *     muon.zeroGrad();
 *     loss(model, batch).backward();
 *     muon.step();
 * }
 * }</pre>
 *
 * <p>A step allocates no large tensors after the first one: momentum buffers are created at the first step,
 * Newton–Schulz workspaces once per shape, and all elementwise work is in place. Native temporaries of a step
 * are released when it returns. Not thread-safe.
 *
 * <p><b>Same-shape batching.</b> Within a group, parameters that share a matrix shape, dtype, device and
 * orthogonalizer run their Newton–Schulz iterations as one batch where the rule of {@link #BATCH_MAX_SIDE}
 * allows it: each one's {@code U} is written into its slice of a stacked buffer {@code [k, rows, cols]}, the
 * stack is orthogonalized by one call, and weight decay and the update are applied per parameter from its slice.
 * Momentum, lr adjustment and skipping are per parameter as above; the results differ from the per-parameter path
 * only by the rounding of batched against single matrix products. {@link MuonConfig#withBatchSameShape} turns it
 * off.
 *
 * <p><b>Row blocks.</b> A parameter given a {@link RowSplit} ({@link Builder#rowSplit}, {@link Builder#rowSplitWhen})
 * is orthogonalized in row blocks: {@code O_k = NS(U_k)} for each block {@code U_k} of {@code U}'s rows, and
 * {@code p_k = p_k − lr·ratio(rows_k, cols)·extraScale·O_k} with the block's own shape in the ratio. Blocks of equal
 * rows run as one batch of Newton–Schulz iterations, unequal ones one by one; the momentum buffer, the Nesterov
 * blend and the weight decay stay the whole parameter's. A stack of matrices {@code [k, rows, cols]} is cut alike
 * in each of its matrices (it must be contiguous). Such a parameter joins no same-shape batch, and its
 * decay and update run on libtorch's ops (the fused stages below serve its momentum only).
 *
 * <p><b>Fused device stages.</b> With {@code muon-cuda} on the class path, a parameter that its provider serves
 * (found by {@link java.util.ServiceLoader}, asked once per parameter at {@link Builder#build()}: a contiguous
 * float32 CUDA parameter with {@code nsPrecision} {@code BFLOAT16}) runs the momentum, Nesterov blend and bfloat16
 * cast as one kernel, and the decay and update as another. The kernels use libtorch's formulas and roundings,
 * so the buffer, and the parameter given the same {@code O}, are libtorch's bit for bit; {@code O} differs by the
 * one rounding of {@code U} to bfloat16 before the normalisation (libtorch normalises the float32 {@code U}). Every
 * other parameter, and every call a kernel declines (the transposed {@code O} of a tall parameter), uses
 * libtorch's ops as described above. See {@code docs/cuda.md}.
 *
 * <p><b>Distributed.</b> Built with {@link Builder#distributed(DistributedGroup, ShardingConfig)}, each
 * parameter is owned by one rank of the group ({@link ShardPlan}): only its owner keeps its momentum and runs its
 * Newton–Schulz iteration, and after the owned updates every parameter is broadcast from its owner, so that all
 * ranks end each step with the same values. Gradients are averaged over the group first unless the
 * {@link ShardingConfig} says otherwise. See {@code docs/distributed.md}.
 *
 * <p><b>Where the state lives.</b> Each group's buffers live beside its parameters unless
 * {@link Builder#stateStorage(StateStorage)} keeps them in pinned host memory (accelerator parameters) or in files
 * (CPU parameters) between updates: each parameter's buffers are brought in for its update and sent back after it,
 * the next one's on their way meanwhile, and the update is the same computation, bit for bit. {@link #close()} then
 * releases them; the state files of an optimizer dropped without {@code close()} are removed once it is unreachable
 * and collected. See {@link StateStorage} and {@code docs/api.md}.
 */
public final class Muon implements TrainingOptimizer, AutoCloseable {
    static {
        // Before anything here loads libtorch: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
    }

    /**
     * The largest {@code max(rows, cols)} for which parameters of the same shape are orthogonalized as one batch.
     *
     * <p>The rule (implemented by the batch planner): parameters run their Newton–Schulz iterations as one batch when
     * <ul>
     *   <li>at least {@link #BATCH_MIN_PARAMETERS} of them, in one group, are updated by this process in the step
     *       (distributed: owned by this rank) and share a 2-D matrix shape (conv filters after flattening; a 3-D
     *       stack is a batch already and joins no other), a dtype, a device and an orthogonalizer;</li>
     *   <li>{@code max(rows, cols) <= BATCH_MAX_SIDE}, or {@code <= BATCH_MAX_SIDE_BFLOAT16_CPU} with
     *       {@code nsPrecision} bfloat16 on a CPU;</li>
     *   <li>{@link MuonConfig#batchSameShape()} is on and the orthogonalization is Newton–Schulz (the exact SVD
     *       reference is never batched);</li>
     *   <li>{@link NsAlgorithm} is {@code GEMM}, or {@code AUTO} where a single matrix would run the GEMM kernel
     *       too ({@link NewtonSchulz#autoKernel}: on a CPU from {@link NewtonSchulz#SYMMETRIC_MIN_ROWS} rows the
     *       symmetric or Gram kernel runs instead). A batch always runs the GEMM kernel, so an explicitly
     *       requested {@code SYMMETRIC} or {@code GRAM} is never batched either.</li>
     * </ul>
     * A batch holds at most {@link #BATCH_MAX_ELEMENTS} matrix elements; more parameters of one shape are split
     * into batches of equal size (within one).
     *
     * <p>Why: batching saves the fixed cost of each call (some forty libtorch ops per Newton–Schulz run, each
     * with its dispatch, and on GPUs a kernel launch each), which dominates for small matrices and vanishes
     * against the multiply-adds of large ones; and it must not cost a matrix the symmetric kernel, whose saving
     * in multiply-adds (up to 1.5× for square matrices) outweighs that fixed cost from 256 on. 512 is the bound
     * the batching issue proposed, not a measured crossover: {@code MuonStepBenchmark -p model=small-24x256
     * -p batching=on,off} measures the 256×256 case (see {@code docs/benchmarks.md}). In bfloat16 on a CPU the
     * bound is measured: a batch beat the same matrices one by one at every size from 384² to 1280² (by 1.04× at
     * 768² on a quiet machine and 1.2–1.6× with a neighbour's load on it, see {@code docs/benchmarks.md}), and
     * from 1536 rows a square matrix runs the symmetric kernel alone instead; where muon-core's native bfloat16
     * half product runs (a CPU with AVX512_BF16, or with AVX2 and FMA, the variant chosen at run time;
     * {@code -Ddev.muon.native.isa=avx2|avx512} forces one), from 512 rows, because alone on that kernel it beats
     * the batch ({@link NewtonSchulz#BFLOAT16_NATIVE_SYMMETRIC_MIN_ROWS}).
     */
    public static final int BATCH_MAX_SIDE = SameShapeBatch.MAX_SIDE;

    /** The bound of {@link #BATCH_MAX_SIDE} for bfloat16 Newton–Schulz on a CPU. */
    public static final int BATCH_MAX_SIDE_BFLOAT16_CPU = SameShapeBatch.BFLOAT16_CPU_MAX_SIDE;

    /**
     * The most matrix elements ({@code members × rows × cols}) in one batch, which bounds the memory of its
     * buffers (see {@link #BATCH_MAX_SIDE}).
     */
    public static final long BATCH_MAX_ELEMENTS = SameShapeBatch.MAX_ELEMENTS;

    /** The fewest parameters of one shape that are orthogonalized as a batch (see {@link #BATCH_MAX_SIDE}). */
    public static final int BATCH_MIN_PARAMETERS = SameShapeBatch.MIN_PARAMETERS;

    private static final System.Logger LOG = System.getLogger(Muon.class.getName());

    private final List<MuonGroup> groups;
    private final Map<Long, ParameterState> byIdentity;
    /** Every parameter in group order: the order of the shard plan and of the broadcasts. */
    private final List<ParameterState> states;
    /** Each parameter's stages and update in progress, in the order of {@link #states}. */
    private final PlannedUpdates updates;
    /** The labels and handles of {@link #states}, for gradient averaging. */
    private final List<String> labels;
    private final List<Tensor> params;
    private final Sharding sharding;
    /** Whether this process updates the parameter at a position: every one, or distributed, those it owns. */
    private final IntPredicate updatedHere;
    private final MuonStateTransfer transfer;
    /** How many parameters the last step orthogonalized in same-shape batches; for tests. */
    private int batchedLastStep;
    private long stepCount;
    private ScheduleRecord scheduleRecord;
    /** The state calls (save, load, restore, close, ...) and the lifecycle this optimizer shares with MuonAdamW. */
    private final StateCalls calls;
    /** Package-private so that a test can hold it while another thread calls in. */
    final SingleThreadGuard guard;
    /** Set by a step that failed part-way; refuses step and save until a restore. */
    final PartialStep partial;
    /** The QK-Clip hook run after each step, or null (the default: no clipping, no cost). */
    private final QkClip qkClip;
    /** Where each parameter keeps its state between updates ({@link StateStorage}). */
    private final StateHomes homes;
    /** Removes the state files once this optimizer is unreachable, if it was not closed; null without files. */
    private final Cleaner.Cleanable dropped;

    /** The cleaner of dropped optimizers' state files: one daemon thread, started by the first optimizer with files. */
    private static final class DroppedFiles {
        static final Cleaner CLEANER = Cleaner.create(task -> {
            Thread t = new Thread(task, "muon-state-cleaner");
            t.setDaemon(true);
            return t;
        });
    }

    private Muon(MuonAssembly parts, Sharding sharding, QkClip qkClip, List<StateStorage> storages,
                 StatePlacement.Seams seams) {
        this.groups = parts.groups;
        this.states = parts.states;
        this.updates = parts.updates;
        this.sharding = sharding;
        this.qkClip = qkClip;
        this.updatedHere = position -> sharding == null || sharding.owns(position);
        this.calls = new StateCalls("Muon", processGroup(), sharding == null ? null : "distributed", LOG, d -> d,
                this::captureState, this::stageFitted, this::discardRestore);
        this.guard = calls.guard;
        this.partial = calls.partial;
        // Before anything that could change a parameter: a refused placement leaves no file behind.
        this.homes = StatePlacement.place(groups, storages, updatedHere, sharding == null ? 0
                : sharding.group().rank(), seams);
        // Registered at once, so that an optimizer dropped (or a build that throws from here on) does not leave its
        // files until the JVM exits. The action holds the files' releases only: a reference to this optimizer would
        // keep it reachable for good.
        Runnable release = homes.fileReleases();
        this.dropped = release == null ? null : DroppedFiles.CLEANER.register(this, release);
        this.transfer = new MuonStateTransfer(groups, states, sharding, homes);
        this.labels = states.stream().map(state -> state.label).toList();
        this.params = states.stream().map(state -> state.param).toList();
        Map<Long, ParameterState> index = new HashMap<>();
        states.forEach(state -> index.put(state.identity, state));
        this.byIdentity = index;
        int first = 0;
        for (MuonGroup group : groups) {
            group.planBatches(first, updatedHere);
            first += group.params.size();
        }
        // The build-time changes to the parameters wait for started(): a distributed build can still be refused
        // by another rank.
    }

    /**
     * The last step of a build, once nothing can refuse it any more (distributed, every rank has agreed): the
     * update's build-time changes to the parameters, Hyperball's fixed radius putting each on its sphere. Before
     * it, a refused build has changed nothing.
     *
     * @return this optimizer
     */
    Muon started() {
        updates.atBuild();
        return this;
    }

    /**
     * Starts building an optimizer with one or more parameter groups.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * An optimizer with one group.
     *
     * @param params the parameters, each 2-D unless {@code config} allows more
     * @param config the group's hyperparameters
     * @return the optimizer
     * @throws IllegalArgumentException if a parameter is rejected (see {@link Builder#build()})
     */
    public static Muon of(Iterable<Tensor> params, MuonConfig config) {
        return builder().addGroup(params, config).build();
    }

    /**
     * An optimizer with one group, from {@code module.parameters()}.
     *
     * @param params the parameters
     * @param config the group's hyperparameters
     * @return the optimizer
     * @throws IllegalArgumentException if a parameter is rejected (see {@link Builder#build()})
     */
    public static Muon of(TensorVector params, MuonConfig config) {
        return builder().addGroup(params, config).build();
    }

    /**
     * Performs one optimization step on every parameter that has a gradient.
     *
     * <p>All gradients are checked before any parameter changes, so a rejected step changes nothing. In a
     * distributed optimizer this rank updates the parameters it owns, then takes part in the broadcast of all of
     * them. A failure after the first parameter changed (out of memory, a lost rank) is rethrown and leaves the
     * optimizer part-way through the step: {@code step}, {@code save}, {@code state} and
     * {@code exportTorchStateDict} then throw {@link IllegalStateException} until {@link #load} or
     * {@link #restore} (docs/api.md, "When a step fails part-way").
     *
     * @throws UnsupportedOperationException if a gradient is sparse or complex
     * @throws IllegalStateException         if a gradient's shape, dtype or device differs from its parameter's,
     *                                       another thread is inside this optimizer's {@code step()} (it is not
     *                                       thread-safe), an earlier step failed part-way, or, distributed, ranks
     *                                       disagree on which parameters have gradients or a rank fails
     */
    @Override
    public void step() {
        try (SingleThreadGuard.Entered entered = guard.enter("step");
             PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            calls.requireOpen("step");
            partial.requireWhole("step");
            List<Tensor> grads = new ArrayList<>();
            for (ParameterState state : states) {
                grads.add(GradientCheck.usable(state.param, "Muon", state.label));
            }
            checkStateBeforeStep();
            prepareStep(grads);
            stepPrepared(grads);
        } finally {
            // The cleaner must not remove the state files while a step reads them.
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Checks, before a step changes anything, the state kept away from the parameters ({@link StateHome}): a state
     * file truncated, replaced or of another run is refused here, naming the buffer, and nothing changes.
     * {@link MuonAdamW} calls it before its own step begins.
     *
     * @throws dev.muon.state.StateFileException naming the buffer
     */
    void checkStateBeforeStep() {
        try {
            homes.all().forEach(StateHome::checkBeforeStep);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The part of a step that changes nothing: plans it and brings in the first update's buffers
     * ({@link PlannedUpdates#prepare}). A refusal here (a state file altered since this run wrote it) leaves the
     * optimizer as it was and usable: it is not part-way. {@link #stepPrepared} follows at once, with the same
     * gradients; {@link MuonAdamW} calls both, this one before its own step begins.
     *
     * @param grads the gradients checked by the caller ({@link GradientCheck}), one per parameter in group order,
     *              null where a parameter has none
     * @throws dev.muon.state.StateFileException naming the buffer
     */
    void prepareStep(List<Tensor> grads) {
        updates.prepare(groups, grads, updatedHere, homes);
    }

    /**
     * The rest of a step {@link #prepareStep} began, with the same gradients: {@link MuonAdamW} checks every
     * gradient of both its groups once before anything changes. Runs inside the caller's guard, scope and no-grad
     * mode.
     */
    void stepPrepared(List<Tensor> grads) {
        // A group of one has nothing to average or to send.
        boolean peers = sharding != null && sharding.group().worldSize() > 1;
        try {
            if (peers && sharding.config().averageGradients()) {
                GradientAveraging.averageGradients(sharding.group(), labels, params);
            }
            if (peers) {
                sharding.beforeUpdate(states);
            }
        } catch (RuntimeException | Error e) {
            updates.cancel(homes);
            throw e;
        }
        try {
            partial.run(stepCount + 1, () -> updateAll(grads, peers));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The part of a step that changes parameters and state, from the first update to the step count. */
    private void updateAll(List<Tensor> grads, boolean peers) {
        batchedLastStep = updates.run(homes);
        if (peers) {
            sharding.broadcastUpdated(states);
        }
        if (qkClip != null) {
            qkClip.afterStep(processGroup());
        }
        for (Tensor grad : grads) {
            if (grad != null) {
                stepCount++;
                break;
            }
        }
    }

    /**
     * The scaled lr a parameter's last update applied (its first row block's, for a row split), computed once by
     * its lr stage; NaN before its first update since this optimizer was built or restored.
     */
    double appliedLr(int index) {
        return updates.appliedLr(index);
    }

    /** {@link #appliedLr(int)} of a parameter of this optimizer, by any handle on it. */
    double appliedLr(Tensor param) {
        return appliedLr(states.indexOf(stateOf(param)));
    }

    /**
     * The number of steps in which this process had at least one gradient; restored by {@link #load(Path)}.
     * Schedules can take it as their clock.
     *
     * @return the step count
     */
    public long stepCount() {
        return stepCount;
    }

    /**
     * Saves every group's config, the parameters, the momentum buffers (and NorMuon's second moments), the step
     * count and the schedule record to one file, muon-core's checkpoint format ({@link CheckpointFile}, see
     * {@code docs/checkpoints.md}): written next to {@code path}, checksummed, forced to disk and renamed over it,
     * so a crash leaves the previous file intact. Distributed, a collective: rank 0 writes, with every owner's
     * momentum.
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
     * reads, and the ranks agree that they read the same content first.
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
     * {@link #load(Path)}, saying what to do with parameters whose place changed since the checkpoint was saved:
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
     * This optimizer's state: the step count, every group's config, the schedule record, and per parameter its
     * value, momentum buffer and NorMuon second moment (copies the caller owns). Parameters are named
     * {@code "parameter i of group g"}. Distributed, a collective: only rank 0's state holds every owner's momentum.
     *
     * @return the state
     * @throws IllegalStateException if another thread is inside this optimizer
     */
    public OptimizerState state() {
        return calls.state();
    }

    /**
     * Restores a state: checks that it fits this optimizer ({@link StateFit}: the same parameters, shapes, dtypes,
     * groups and build settings, buffers where they belong with finite values), then copies its parameter values
     * and buffers in, and takes its step count, schedule record and each group's hyperparameters ({@code lr},
     * {@code weightDecay}, {@code momentum}, {@code nesterov}, {@code adjustLr}, {@code extraScale}). A parameter
     * without a buffer in the state has none afterwards. The one restore behaviour of {@code Muon} and
     * {@code MuonAdamW}, behind every {@code load} and {@code importTorchStateDict}.
     *
     * @param state the state
     * @throws dev.muon.state.StateMismatchException if it does not fit, listing every difference; nothing changes
     * @throws IllegalStateException                 if another thread is inside this optimizer
     */
    public void restore(OptimizerState state) {
        restore(state, AssignmentChanges.REFUSE);
    }

    /**
     * {@link #restore(OptimizerState)}, saying what to do with parameters whose place changed since the state was
     * taken (a parameter added at the end of a group): {@link AssignmentChanges#START_FRESH} restores every
     * parameter whose entry is unchanged bit for bit, keeps a new one as it is with no momentum, and names each in
     * one INFO line of this class's logger. A parameter moved to another group is refused under both options,
     * naming the groups whose sizes changed: this optimizer's parameters are known by their place only
     * ({@code "parameter i of group g"}), so the state cannot say which one moved.
     *
     * @param state   the state
     * @param changes what to do with parameters whose place changed
     * @throws dev.muon.state.StateMismatchException if it does not fit, even so, listing every difference; nothing
     *                                               changes
     * @throws IllegalStateException                 if another thread is inside this optimizer
     */
    public void restore(OptimizerState state, AssignmentChanges changes) {
        calls.restore(state, changes);
    }

    /**
     * Exports the momentum buffers, the step count and every group's hyperparameters as a {@code torch.optim.Muon}
     * state dict (key {@code "muon"}) in a file Python's {@code torch.load(f, weights_only=True)} reads, with the
     * parameter names by index ({@code "param_names"}); the layout of {@link MuonAdamW#exportTorchStateDict(Path)}
     * without its AdamW part ({@link TorchStateFile}). Written next to {@code path} and renamed over it.
     *
     * @param path where to write
     * @throws IllegalStateException         if a group's config has no {@code torch.optim.Muon} equivalent (a
     *                                       per-step coefficient schedule, {@code adjustLr} other than
     *                                       {@code ORIGINAL} or {@code MATCH_RMS_ADAMW}, {@code extraScale} other
     *                                       than 1), or another thread is inside this optimizer; nothing is written
     * @throws UnsupportedOperationException if the optimizer is distributed
     * @throws java.io.UncheckedIOException  if the file cannot be written; {@code path} is then unchanged
     */
    public void exportTorchStateDict(Path path) {
        calls.exportTorchStateDict(path);
    }

    /**
     * Imports a file of the layout {@link #exportTorchStateDict(Path)} writes (from Python too), read without
     * running anything from it ({@link TorchStateFile}), then {@link #restore(OptimizerState)}: the momentum
     * buffers, the step count, and each group's {@code lr}, {@code weight_decay}, {@code momentum},
     * {@code nesterov} and {@code adjust_lr_fn}; {@code ns_coefficients}, {@code ns_steps} and {@code eps} decided
     * how this optimizer was built and must be its own.
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

    /** Every parameter's label, in group order ({@code "parameter 0 of group 0"}, or its name). */
    List<String> labels() {
        return labels;
    }

    /** Every parameter, in group order. */
    List<Tensor> params() {
        return params;
    }

    /** Whether a step averages the gradients over ranks first: distributed, with peers and averaging on. */
    boolean averagesGradients() {
        return sharding != null && sharding.group().worldSize() > 1 && sharding.config().averageGradients();
    }

    /** The process group of a distributed optimizer, null in a single process. */
    private DistributedGroup processGroup() {
        return sharding == null ? null : sharding.group();
    }

    /**
     * Releases the optimizer's state: the state files of a {@link StateStorage.Place#FILES} group are removed, host
     * and device buffers freed. Afterwards every call that uses the state ({@code step}, {@code save},
     * {@code load}, {@code state}, {@code restore}, the PyTorch-state files, {@code momentumBuffer},
     * {@code secondMoment}) throws {@link IllegalStateException}; a second {@code close()} does nothing. The
     * parameters stay as they are. An optimizer dropped without {@code close()} has its state files removed once it
     * is unreachable and collected; after {@code close()}, collection does nothing.
     *
     * @throws IllegalStateException if another thread is inside this optimizer
     */
    @Override
    public void close() {
        calls.close(() -> {
            homes.all().forEach(StateHome::close);
            if (dropped != null) {
                // Already released by the homes: this only deregisters, so collection does nothing afterwards.
                dropped.clean();
            }
            for (ParameterState state : states) {
                for (BufferSpec spec : state.declared) {
                    Tensor buffer = state.evict(spec);
                    if (buffer != null) {
                        buffer.close();
                    }
                }
            }
        });
    }

    /** This optimizer's state ({@link MuonStateTransfer#capture}). */
    OptimizerState captureState(StateCapture capture) {
        try {
            return transfer.capture(capture, stepCount, scheduleRecord);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Stages the restore of a state fitted to this optimizer ({@link StateCalls}): stores the state kept away from the
     * parameters ({@link #stageRestore}), distributed on every rank before any puts it in force, and returns what
     * applies it and takes its schedule record.
     */
    private Runnable stageFitted(FittedState fitted, String source) {
        stageRestore(fitted.state());
        return () -> {
            applyChecked(fitted.state());
            scheduleRecord = ScheduleRecords.afterLoad(fitted.state().schedule(), scheduleRecord, lrs(), source);
        };
    }

    /**
     * Stores the buffers of a fitted state that live away from their parameters ({@link StateStorage}), staged until
     * {@link #applyChecked}: the one part of a restore that can fail (a file write), done before anything changes.
     *
     * @throws java.io.UncheckedIOException if a buffer cannot be stored; nothing changed then
     */
    void stageRestore(OptimizerState checked) {
        try {
            transfer.stage(checked);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Lets go of what {@link #stageRestore} stored. */
    void discardRestore() {
        transfer.discardStaged();
    }

    /**
     * Restores a state that {@link StateFit} has accepted for this optimizer: past the staged store of the state kept
     * away from the parameters ({@link #stageRestore}, done here unless done for this state), cannot fail (copies
     * into tensors of checked shapes). Distributed, each rank keeps the buffers of the parameters it owns. The
     * schedule record is the caller's to restore.
     */
    void applyChecked(OptimizerState checked) {
        try {
            transfer.apply(checked);
        } finally {
            Reference.reachabilityFence(this);
        }
        stepCount = checked.step();
        // A state does not hold the lrs of the last updates.
        updates.forgetAppliedLrs();
        partial.clear();
    }

    private double[] lrs() {
        double[] lrs = new double[groups.size()];
        for (int g = 0; g < groups.size(); g++) {
            lrs[g] = groups.get(g).config().lr();
        }
        return lrs;
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
     * @param record one base lr per group
     * @throws IllegalArgumentException if it does not hold one base lr per group
     */
    @Override
    public void recordSchedule(ScheduleRecord record) {
        scheduleRecord = ScheduleRecords.checked(record, groupCount());
    }

    /** Clears every gradient (sets it to undefined, as libtorch's {@code zero_grad()} does by default). */
    @Override
    public void zeroGrad() {
        try (PointerScope scope = new PointerScope()) {
            for (ParameterState state : states) {
                Tensor grad = state.param.mutable_grad();
                if (grad.defined()) {
                    grad.put(new Tensor());
                }
            }
        }
    }

    /**
     * The number of parameter groups.
     *
     * @return the group count
     */
    @Override
    public int groupCount() {
        return groups.size();
    }

    /**
     * The current configuration of a group (its lr reflects {@link #setLr}).
     *
     * @param group the group index
     * @return the configuration
     * @throws IllegalArgumentException if the index is out of range
     */
    public MuonConfig config(int group) {
        return group(group).config();
    }

    /**
     * The current learning rate of a group.
     *
     * @param group the group index
     * @return the lr
     * @throws IllegalArgumentException if the index is out of range
     */
    @Override
    public double lr(int group) {
        return group(group).config().lr();
    }

    /**
     * Sets a group's learning rate for the following steps (schedules call this between steps).
     *
     * @param group the group index
     * @param lr    the new lr, finite and {@code >= 0}
     * @throws IllegalArgumentException if the index is out of range or the lr is invalid; nothing changes then
     */
    @Override
    public void setLr(int group, double lr) {
        MuonGroup g = group(group);
        g.hyperparameters(g.config().withLr(lr).hyperparameters());
    }

    /**
     * The parameters of a group, in the order they were given.
     *
     * @param group the group index
     * @return new handles on the parameters (closing one leaves the optimizer's own)
     * @throws IllegalArgumentException if the index is out of range
     */
    public List<Tensor> parameters(int group) {
        List<Tensor> params = new ArrayList<>();
        for (ParameterState state : group(group).params) {
            // A handle of the caller's own: closing it leaves the optimizer's handle working.
            params.add(new Tensor(state.param));
        }
        return Collections.unmodifiableList(params);
    }

    /**
     * The momentum buffer of a parameter, in the parameter's shape and dtype; empty before its first update.
     * The returned tensor is a new handle on the live state: writing to it changes the optimizer, closing it does
     * not. Where the group keeps its state away from its parameters ({@link StateStorage}), it is a copy of the
     * stored buffer, on the parameter's device, and writing to it changes nothing.
     *
     * @param param a parameter of this optimizer (any handle on the same tensor)
     * @return the buffer, if the parameter has been updated
     * @throws IllegalArgumentException if {@code param} is not a parameter of this optimizer
     * @throws IllegalStateException    if the optimizer was closed
     */
    public Optional<Tensor> momentumBuffer(Tensor param) {
        calls.requireOpen("momentumBuffer");
        return Optional.ofNullable(bufferOf(param, UpdateRecipe.MOMENTUM.key())).map(Tensor::new);
    }

    /**
     * The bytes of momentum, and with NorMuon of per-row second moments, this process keeps, wherever they live
     * ({@link StateStorage}): all of it in a single process, about {@code 1/W} of it on each of {@code W} ranks.
     *
     * @return bytes
     */
    public long stateBytes() {
        return transfer.bytes();
    }

    /**
     * The bytes of working memory (device or RAM) the homes of state kept away from its parameters hold now: outside a
     * step, the tensors kept for reuse; for tests and the benchmark's bound on resident state.
     */
    long workingStateBytes() {
        long bytes = 0;
        for (StateHome home : homes.all()) {
            bytes += home.workingBytes();
        }
        return bytes;
    }

    /** The homes of state kept away from its parameters, in order; for tests. */
    List<StateHome> stateHomes() {
        return homes.all();
    }

    /**
     * The shard plan of a distributed optimizer: which rank owns which parameter, in group order.
     *
     * @return the plan, empty for a single-process optimizer
     */
    public Optional<ShardPlan> shardPlan() {
        return sharding == null ? Optional.empty() : Optional.of(sharding.plan());
    }

    /**
     * NorMuon's per-row second moment of a parameter: a vector of its rows (a {@code [k, rows]} matrix for a stack of
     * {@code k}), float32 (float64 for a float64 parameter); empty before its first update or without NorMuon. The
     * returned tensor is a new handle on the live state: writing to it changes the optimizer, closing it does not.
     *
     * @param param a parameter of this optimizer (any handle on the same tensor)
     * @return the second moment, if the parameter has been updated with NorMuon
     * @throws IllegalArgumentException if {@code param} is not a parameter of this optimizer
     * @throws IllegalStateException    if the optimizer was closed
     */
    public Optional<Tensor> secondMoment(Tensor param) {
        calls.requireOpen("secondMoment");
        return Optional.ofNullable(bufferOf(param, UpdateRecipe.SECOND_MOMENT.key())).map(Tensor::new);
    }

    /** The orthogonalizer serving a parameter; for tests of workspace sharing. */
    Orthogonalizer orthogonalizerOf(Tensor param) {
        return stateOf(param).orthogonalizer;
    }

    /** The row blocks of a parameter, or null when it is orthogonalized whole; for tests. */
    RowBlocks rowBlocksOf(Tensor param) {
        return stateOf(param).rowBlocks;
    }

    /** The fused momentum and update stages serving a parameter, or null for libtorch's ops; for tests. */
    FusedUpdateKernels fusedKernelsOf(Tensor param) {
        return stateOf(param).fusedKernels;
    }

    /** A declared buffer of a parameter, wherever it lives ({@link StateHomes#buffer}), or null. */
    private Tensor bufferOf(Tensor param, String key) {
        ParameterState state = stateOf(param);
        try {
            return homes.buffer(states.indexOf(state), state, key);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The one lookup of a parameter's state, by its tensor's identity. */
    private ParameterState stateOf(Tensor param) {
        requireDefined(param);
        ParameterState state = byIdentity.get(ParameterState.identityOf(param));
        if (state == null) {
            throw new IllegalArgumentException("param is not a parameter of this optimizer (shape "
                    + Arrays.toString(param.shape()) + ")");
        }
        return state;
    }

    /** A parameter argument: a tensor handle with storage, named in the refusal otherwise. */
    private static void requireDefined(Tensor param) {
        Objects.requireNonNull(param, "param must not be null");
        if (!param.defined()) {
            throw new IllegalArgumentException("param must be a defined tensor, got an undefined one");
        }
    }

    /** The same-shape batches of a group as planned at construction, each as its members' handles; for tests. */
    List<List<Tensor>> sameShapeBatches(int group) {
        List<List<Tensor>> batches = new ArrayList<>();
        for (SameShapeBatch batch : group(group).batches()) {
            List<Tensor> members = new ArrayList<>();
            batch.members.forEach(state -> members.add(state.param));
            batches.add(members);
        }
        return batches;
    }

    /** How many parameters the last step orthogonalized in same-shape batches; for tests. */
    int batchedLastStep() {
        return batchedLastStep;
    }

    /** What every rank of a distributed optimizer must agree on: groups, configs, shapes, dtypes, sharding. */
    private static String fingerprint(Muon muon) {
        return "world=" + muon.sharding.group().worldSize() + ' ' + muon.sharding.config() + '\n'
                + MuonGroup.describe(muon.groups);
    }

    private MuonGroup group(int index) {
        if (index < 0 || index >= groups.size()) {
            throw new IllegalArgumentException("group must be in [0, " + groups.size() + "), got " + index);
        }
        return groups.get(index);
    }

    /**
     * Collects parameter groups; {@link #build()} validates them all at once.
     */
    public static final class Builder {
        private final List<List<Tensor>> paramLists = new ArrayList<>();
        private final List<MuonConfig> configs = new ArrayList<>();
        private DistributedGroup group;
        private ShardingConfig shardingConfig;
        private boolean agreeWithPeers = true;
        private boolean startedByOwner;
        private ShardPlan reusedPlan;
        private List<String> names;
        private QkClip qkClip;
        /** Row splits by tensor, in the order given; resolved and checked at build. */
        private final List<Map.Entry<Tensor, RowSplit>> rowSplits = new ArrayList<>();
        private final List<Map.Entry<java.util.function.Predicate<Tensor>, RowSplit>> rowSplitRules =
                new ArrayList<>();
        private StateStorage stateStorage = StateStorage.withParameter();
        /** Storages set for one group, by group index; checked at build. */
        private final Map<Integer, StateStorage> groupStorages = new HashMap<>();
        private StatePlacement.Seams seams = StatePlacement.Seams.NONE;

        private Builder() {
        }

        /**
         * Where every group keeps its state buffers between updates (see {@link StateStorage}); a group given a
         * storage of its own by {@link #stateStorage(int, StateStorage)} keeps that one.
         * {@link StateStorage#withParameter()} by default. {@link #build()} refuses a storage that cannot serve a
         * parameter of its group, and a directory that cannot hold the files, naming it.
         *
         * @param storage where
         * @return this builder
         * @throws NullPointerException if {@code storage} is null
         */
        public Builder stateStorage(StateStorage storage) {
            this.stateStorage = Objects.requireNonNull(storage, "stateStorage must not be null");
            return this;
        }

        /**
         * Where one group keeps its state buffers between updates (see {@link StateStorage}).
         *
         * @param group   the group's index, in the order the groups were added
         * @param storage where
         * @return this builder
         * @throws NullPointerException if {@code storage} is null; {@link #build()} checks the index
         */
        public Builder stateStorage(int group, StateStorage storage) {
            groupStorages.put(group, Objects.requireNonNull(storage, "stateStorage must not be null"));
            return this;
        }

        /**
         * For tests: a CPU parameter stands in for an accelerator's under {@link StateStorage#hostMemory()}, its host
         * buffers plain CPU tensors, moved by {@code transfers}.
         */
        Builder cpuAsAccelerator(DeviceTransfers transfers) {
            this.seams = new StatePlacement.Seams(Objects.requireNonNull(transfers, "transfers must not be null"),
                    seams.disk());
            return this;
        }

        /** For tests: the file operations of {@link StateStorage#files} (faults injected). */
        Builder stateDisk(FileHome.Disk disk) {
            this.seams = new StatePlacement.Seams(seams.cpuAsAccelerator(),
                    Objects.requireNonNull(disk, "disk must not be null"));
            return this;
        }

        /**
         * Runs QK-Clip after every step: the heads of the hook's layers whose reported logits exceeded its
         * {@code τ} are rescaled (see {@link QkClip}). Off unless called. {@link #build()} checks that every
         * tensor the hook names is a parameter of this optimizer.
         *
         * @param clip the hook
         * @return this builder
         */
        public Builder qkClip(QkClip clip) {
            this.qkClip = Objects.requireNonNull(clip, "qkClip must not be null");
            return this;
        }

        /**
         * Orthogonalizes {@code param} in row blocks (see {@link RowSplit}). A rule set here wins over
         * {@link #rowSplitWhen}; {@link #build()} checks that {@code param} is a parameter of the optimizer and that
         * the blocks cover its rows.
         *
         * @param param a parameter of one of the groups (any handle on the same tensor)
         * @param split the rule
         * @return this builder
         * @throws NullPointerException if an argument is null
         */
        public Builder rowSplit(Tensor param, RowSplit split) {
            requireDefined(param);
            Objects.requireNonNull(split, "split must not be null");
            rowSplits.add(Map.entry(NativeLifetime.outliveScope(new Tensor(param)), split));
            return this;
        }

        /**
         * Orthogonalizes in row blocks every parameter for which {@code rule} holds and that no
         * {@link #rowSplit(Tensor, RowSplit)} names; when several rules hold, the first one added wins.
         * {@link #build()} checks that the blocks cover the rows of every parameter the rule selects.
         *
         * @param rule  a predicate on the parameter
         * @param split the rule's split
         * @return this builder
         * @throws NullPointerException if an argument is null
         */
        public Builder rowSplitWhen(java.util.function.Predicate<Tensor> rule, RowSplit split) {
            Objects.requireNonNull(rule, "rule must not be null");
            Objects.requireNonNull(split, "split must not be null");
            rowSplitRules.add(Map.entry(rule, split));
            return this;
        }

        /**
         * Shards the optimizer over {@code group}: each parameter's momentum and Newton–Schulz work live on one
         * rank, and every rank ends each step with the same parameters. Every rank must build its optimizer from
         * the same parameters and settings; {@link #build()} checks that with one exchange between the ranks.
         *
         * @param distributedGroup the group this process has joined
         * @param config           how to shard
         * @return this builder
         */
        public Builder distributed(DistributedGroup distributedGroup, ShardingConfig config) {
            this.group = Objects.requireNonNull(distributedGroup, "group must not be null");
            this.shardingConfig = Objects.requireNonNull(config, "sharding config must not be null");
            return this;
        }

        /**
         * For a restore or an owner that checked already: build a sharded optimizer with no exchange between the
         * ranks, reusing {@code plan} when it is given.
         */
        Builder withoutAgreement(ShardPlan plan) {
            this.agreeWithPeers = false;
            this.reusedPlan = plan;
            return this;
        }

        /**
         * For an owner that builds this optimizer as one part of its own build ({@code MuonAdamW}): {@link #build()}
         * returns it before its build-time changes to the parameters, which the owner makes with
         * {@link Muon#started()} once its own build can no longer be refused.
         */
        Builder startedByOwner() {
            this.startedByOwner = true;
            return this;
        }

        /**
         * Names the parameters (one name per parameter of all groups, in order) instead of "parameter i of group
         * g": an owner that knows their names passes them. The names go into states and checkpoints; messages say
         * {@code parameter 'name'}.
         */
        Builder names(List<String> parameterNames) {
            this.names = List.copyOf(parameterNames);
            return this;
        }

        /**
         * Adds a group.
         *
         * @param params the group's parameters
         * @param config the group's hyperparameters
         * @return this builder
         */
        public Builder addGroup(Iterable<Tensor> params, MuonConfig config) {
            Objects.requireNonNull(params, "params must not be null");
            Objects.requireNonNull(config, "config must not be null");
            List<Tensor> list = new ArrayList<>();
            params.forEach(list::add);
            paramLists.add(list);
            configs.add(config);
            return this;
        }

        /**
         * Adds a group from {@code module.parameters()}.
         *
         * @param params the group's parameters
         * @param config the group's hyperparameters
         * @return this builder
         */
        public Builder addGroup(TensorVector params, MuonConfig config) {
            Objects.requireNonNull(params, "params must not be null");
            return addGroup(Arrays.asList(params.get()), config);
        }

        /**
         * Validates every group and creates the optimizer.
         *
         * @return the optimizer
         * @throws IllegalArgumentException if there are no parameters, a group is empty, a parameter appears
         *                                  twice, is not a leaf tensor, shares memory with another parameter, or
         *                                  has a dtype or shape Muon does not accept, or, distributed, is not
         *                                  contiguous; or a row split names a tensor that is no parameter, gives one
         *                                  tensor two rules, or does not fit its parameter's rows; or the
         *                                  {@link #qkClip} hook names a tensor that is not one of the parameters
         * @throws IllegalStateException    distributed, if another rank failed to build or built from other
         *                                  parameters or settings, or the ranks cannot reach each other
         */
        public Muon build() {
            Muon built = agreedBuild();
            return startedByOwner ? built : built.started();
        }

        /** This rank's build, agreed with the other ranks where it is distributed and not an owner's part. */
        private Muon agreedBuild() {
            if (group == null || !agreeWithPeers) {
                return buildLocal();
            }
            // A rank whose build succeeded while another's failed lets go of what it opened (a state file).
            Muon[] built = new Muon[1];
            try {
                return group.agree("Muon parameter lists", () -> built[0] = buildLocal(), Muon::fingerprint);
            } catch (RuntimeException | Error e) {
                if (built[0] != null) {
                    built[0].close();
                }
                throw e;
            }
        }

        private Muon buildLocal() {
            for (int g : groupStorages.keySet()) {
                if (g < 0 || g >= paramLists.size()) {
                    throw new IllegalArgumentException("stateStorage group must be in [0, " + paramLists.size()
                            + "), got " + g);
                }
            }
            List<StateStorage> storages = new ArrayList<>();
            for (int g = 0; g < paramLists.size(); g++) {
                storages.add(groupStorages.getOrDefault(g, stateStorage));
            }
            MuonAssembly parts = MuonAssembly.of(paramLists, configs, names, rowSplits, rowSplitRules, group != null);
            if (qkClip != null) {
                List<Tensor> tensors = new ArrayList<>();
                parts.states.forEach(state -> tensors.add(state.param));
                qkClip.requireParametersOf(QkClip.identities(tensors), "Muon");
                List<Tensor> muown = new ArrayList<>();
                parts.groups.forEach(g -> g.params.forEach(state -> {
                    if (g.config().muown() != null) {
                        muown.add(state.param);
                    }
                }));
                qkClip.refuseMuown(QkClip.identities(muown));
            }
            Sharding sharding = null;
            if (group != null) {
                ShardPlan plan = reusedPlan != null ? reusedPlan
                        : Sharding.planFor(parts.states, MuonGroup.batchPositions(parts.groups), group.worldSize());
                sharding = new Sharding(group, shardingConfig, plan);
            }
            return new Muon(parts, sharding, qkClip, storages, seams);
        }
    }
}
