package dev.muon;

import dev.muon.distributed.DistributedGroup;
import dev.muon.state.AssignmentChanges;
import dev.muon.state.FittedState;
import dev.muon.state.OptimizerState;
import dev.muon.state.StateMismatchException;
import dev.muon.state.TorchStateFile;

import java.nio.file.Path;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The calls on an optimizer's state that {@link Muon} and {@link MuonAdamW} share, written once: {@code save},
 * both {@code load}s and {@code restore}s, {@code state}, the PyTorch state files and {@code close}, each entered
 * through the optimizer's {@link SingleThreadGuard}, refused once closed or part-way ({@link PartialStep}), and a
 * restore fitted ({@link FittedState}), agreed between ranks and logged the same way. The optimizer holds one and
 * delegates its public methods to it; what differs between the two comes in as values: its name, process group,
 * mismatch hints, how it captures its state and how it stages and applies a fitted one. It holds no optimizer.
 */
final class StateCalls {
    /**
     * How an optimizer restores a state that fits it: {@link #stage} does everything that can fail, before anything
     * changes, and returns what puts it in force, which cannot fail.
     */
    interface Stager {
        /**
         * Stores what a restore of {@code fitted} needs (a state file, libtorch's fresh AdamW) without changing the
         * optimizer.
         *
         * @param source what the state came from ("checkpoint /x/run.ckpt"), for the schedule record's note
         * @return what applies the staged restore
         */
        Runnable stage(FittedState fitted, String source);
    }

    /** Entered by every call of the optimizer that touches tensors; package-private for tests. */
    final SingleThreadGuard guard;
    /** Set by a step that failed part-way; refuses step and save until a restore. */
    final PartialStep partial;
    private final String name;
    private final DistributedGroup group;
    /** How a distributed optimizer says it is one, for the refusals of the single-process calls; null if not. */
    private final String distributedAs;
    private final System.Logger log;
    private final UnaryOperator<StateMismatchException.Difference> hints;
    private final Function<StateCapture, OptimizerState> capture;
    private final Stager stager;
    /** Lets go of what {@link #stager} stored, when a restore fails (here or, distributed, on another rank). */
    private final Runnable discard;
    private boolean closed;

    /**
     * The state calls of one optimizer, with a guard and a part-way record of their own.
     *
     * @param name          the optimizer's class name, for messages
     * @param group         its process group, or null in a single process
     * @param distributedAs how the refusal of a single-process call describes it ({@code "distributed"}), null in a
     *                      single process
     * @param log           the optimizer's logger: a restore under {@link AssignmentChanges#START_FRESH} logs there
     * @param hints         adds a builder hint to a difference of a mismatch
     * @param capture       the optimizer's state, as the capture asks
     * @param stager        how the optimizer stages and applies a fitted state
     * @param discard       lets go of what {@code stager} stored
     */
    StateCalls(String name, DistributedGroup group, String distributedAs, System.Logger log,
               UnaryOperator<StateMismatchException.Difference> hints, Function<StateCapture, OptimizerState> capture,
               Stager stager, Runnable discard) {
        this.name = name;
        this.guard = new SingleThreadGuard(name);
        this.partial = new PartialStep(name);
        this.group = group;
        this.distributedAs = distributedAs;
        this.log = log;
        this.hints = hints;
        this.capture = capture;
        this.stager = stager;
        this.discard = discard;
    }

    /** The optimizer's {@code save(Path)}: its whole state to a checkpoint ({@link StateFiles#save}). */
    void save(Path path) {
        Objects.requireNonNull(path, "path must not be null");
        guard.run("save", () -> {
            requireOpen("save");
            partial.requireWhole("save");
            StateFiles.save(path, capture.apply(StateCapture.HANDLES), group);
        });
    }

    /** The optimizer's {@code load(Path, AssignmentChanges)}: a checkpoint read, fitted and restored. */
    void load(Path path, AssignmentChanges changes) {
        Objects.requireNonNull(path, "path must not be null");
        Objects.requireNonNull(changes, "changes must not be null");
        guard.run("load", () -> {
            requireOpen("load");
            String source = "checkpoint " + path;
            OptimizerState mine = capture.apply(StateCapture.NONE);
            // The file's shapes are checked against this optimizer's before any tensor of it is allocated.
            restoreChecked(StateFiles.load(path, group, described -> FittedState.of(mine, described, changes,
                    source, hints)), source, changes);
        });
    }

    /** The optimizer's {@code state()}: copies the caller owns. */
    OptimizerState state() {
        return guard.call("state", () -> {
            requireOpen("state");
            partial.requireWhole("state");
            return capture.apply(StateCapture.COPIES);
        });
    }

    /** The optimizer's {@code restore(OptimizerState, AssignmentChanges)}. */
    void restore(OptimizerState state, AssignmentChanges changes) {
        Objects.requireNonNull(state, "state must not be null");
        Objects.requireNonNull(changes, "changes must not be null");
        guard.run("restore", () -> {
            requireOpen("restore");
            restoreChecked(state, "the state", changes);
        });
    }

    /** The optimizer's {@code exportTorchStateDict(Path)} ({@link TorchStateFile#write}). */
    void exportTorchStateDict(Path path) {
        Objects.requireNonNull(path, "path must not be null");
        guard.run("exportTorchStateDict", () -> {
            requireOpen("exportTorchStateDict");
            requireSingleProcess("exportTorchStateDict");
            partial.requireWhole("exportTorchStateDict");
            TorchStateFile.write(path, capture.apply(StateCapture.HANDLES));
        });
    }

    /** The optimizer's {@code importTorchStateDict(Path)} ({@link TorchStateFile#read}), then a restore. */
    void importTorchStateDict(Path path) {
        Objects.requireNonNull(path, "path must not be null");
        guard.run("importTorchStateDict", () -> {
            requireOpen("importTorchStateDict");
            requireSingleProcess("importTorchStateDict");
            OptimizerState read = TorchStateFile.read(path, capture.apply(StateCapture.NONE));
            restoreChecked(read, "torch state dict " + path, AssignmentChanges.REFUSE);
        });
    }

    /**
     * The optimizer's {@code close()}: the first call runs {@code release}, every later one does nothing.
     *
     * @param release frees the optimizer's state
     */
    void close(Runnable release) {
        guard.run("close", () -> {
            if (closed) {
                return;
            }
            closed = true;
            release.run();
        });
    }

    /**
     * Refuses a call that uses the state once {@link #close} has released it.
     *
     * @param call the call about to run, for the message
     * @throws IllegalStateException once the optimizer is closed
     */
    void requireOpen(String call) {
        if (closed) {
            throw new IllegalStateException(name + "." + call + "() on a closed " + name + ": close() released its "
                    + "state");
        }
    }

    private void requireSingleProcess(String operation) {
        if (distributedAs != null) {
            throw new UnsupportedOperationException(operation + " works on a single-process optimizer only; this "
                    + "one is " + distributedAs + " (save and load work distributed)");
        }
    }

    /**
     * Fits {@code candidate} to the optimizer ({@link FittedState}, {@link dev.muon.state.StateFit}) and stages its
     * restore, then applies it. Distributed, every rank fits and stages its copy and all succeed before any goes on;
     * a failure anywhere discards what was staged, and nothing changes.
     */
    private void restoreChecked(OptimizerState candidate, String source, AssignmentChanges changes) {
        OptimizerState mine = capture.apply(StateCapture.NONE);
        Supplier<Staged> stage = () -> {
            FittedState fitted = FittedState.of(mine, candidate, changes, source, hints);
            return new Staged(fitted, stager.stage(fitted, source));
        };
        Staged staged;
        try {
            staged = group == null ? stage.get() : group.agree("restoring " + source, stage, s -> "fits");
        } catch (RuntimeException | Error e) {
            discard.run();
            throw e;
        }
        staged.apply().run();
        if (!staged.fitted().fresh().isEmpty()) {
            log.log(System.Logger.Level.INFO, staged.fitted().logLine(name, source));
        }
    }

    /** A fitted state and what puts it in force. */
    private record Staged(FittedState fitted, Runnable apply) {
    }
}
