package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.internal.TorchNatives;
import dev.muon.schedule.ScheduleRecord;
import dev.muon.schedule.TrainingOptimizer;
import dev.muon.state.EmaNesterovStateFile;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.StringTensorDictItem;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * EMA-Nesterov (Yau, Li, Glentis, Boreiko, Wai and Hong, 2026, arXiv 2605.25395) around any
 * {@link TrainingOptimizer}: {@link Muon}, {@link MuonAdamW}, or libtorch's own through
 * {@link dev.muon.schedule.LibtorchOptimizer#of}. It keeps {@code m}, an EMA of each parameter's increments, moves
 * the parameters to the lookahead point {@code θ_t + β_t · m_t} before the forward pass ({@link #lookahead()}), and
 * lets the wrapped optimizer step from there with the gradient computed there ({@link #step()}), then updates
 * {@code m}; the parameters are not moved back. {@link EmaNesterovConfig} has the formula and the defaults.
 *
 * <p>The update is that of the authors' {@code EMA_Nesterov} in modded-nanogpt's optimization-track records #39 and
 * #40 ({@code nesterov_step()} before the forward pass, {@code step()} after it): the EMA is updated at every step,
 * inside the lookahead window or not, and {@code β_t} is read from the wrapped optimizer's lr when
 * {@link #lookahead()} is called, so a schedule should set the step's lr first ({@link
 * dev.muon.schedule.LrScheduler#apply} before {@code lookahead()}). {@code θ_t} is each parameter's value when
 * {@code lookahead()} is called.
 *
 * <p>A loop:
 * <pre>{@code
 * EmaNesterov opt = EmaNesterov.wrap(muonAdamW, model.named_parameters(), EmaNesterovConfig.defaults());
 * for (long step = 0; step < steps; step++) {
 *     lrs.apply(step);
 *     opt.zeroGrad();
 *     opt.lookahead();                 // before the forward pass
 *     loss(model, batch).backward();
 *     opt.step();
 * }
 * }</pre>
 *
 * <p><b>What is saved where.</b> {@link #save(Path)} writes this wrapper's own state, the step count, the reference
 * lr and {@code m} per parameter, to its own file ({@link EmaNesterovStateFile}); the wrapped optimizer's state and
 * the parameters are the wrapped optimizer's to save ({@link Muon#save}, {@link MuonAdamW#save}) or the model's.
 * Save and load between a {@code step()} and the next {@code lookahead()}; restore the parameters and the wrapped
 * optimizer, and load this file, and the run continues bit for bit as if it had not stopped.
 *
 * <p>Native memory: {@code m} and a workspace holding {@code θ_t}, each of the parameter's shape, dtype and device,
 * made when the wrapper is made and freed by {@link #close()}. Not thread-safe.
 */
public final class EmaNesterov implements TrainingOptimizer, AutoCloseable {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    private final TrainingOptimizer inner;
    private final EmaNesterovConfig config;
    private final List<String> names;
    private final List<Tensor> params;
    /** The EMA of increments, m, per parameter. */
    private final List<Tensor> emas;
    /** θ_t per parameter while a step is open; then θ_{t+1} − θ_t. */
    private final List<Tensor> previous;
    private double referenceLr;
    private long stepCount;
    private boolean pending;
    private double lastLookahead;
    private boolean closed;

    private EmaNesterov(TrainingOptimizer inner, Map<String, Tensor> named, EmaNesterovConfig config) {
        this.inner = Objects.requireNonNull(inner, "inner must not be null");
        this.config = Objects.requireNonNull(config, "config must not be null");
        if (named.isEmpty()) {
            throw new IllegalArgumentException("EMA-Nesterov needs at least one parameter, got none");
        }
        int groups = inner.groupCount();
        if (config.lrGroup() >= groups) {
            throw new IllegalArgumentException("lrGroup must be in [0, " + groups + ") for this optimizer, got "
                    + config.lrGroup());
        }
        double lr0 = inner.lr(config.lrGroup());
        if (config.scaleByLr() && !(lr0 > 0)) {
            throw new IllegalArgumentException("scaleByLr needs group " + config.lrGroup() + "'s lr > 0 when the "
                    + "wrapper is made (it is the scale's reference), got " + lr0);
        }
        Map<Long, String> seen = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : named.entrySet()) {
            Tensor p = Objects.requireNonNull(e.getValue(), "parameter '" + e.getKey() + "' must not be null");
            if (!p.defined()) {
                throw new IllegalArgumentException("parameter '" + e.getKey() + "' is undefined");
            }
            if (p.is_sparse() || p.is_complex()) {
                throw new UnsupportedOperationException("EMA-Nesterov does not support sparse or complex "
                        + "parameters; parameter '" + e.getKey() + "' is " + (p.is_sparse() ? "sparse" : "complex"));
            }
            if (!p.is_floating_point()) {
                throw new IllegalArgumentException("EMA-Nesterov only supports floating-point parameters; "
                        + "parameter '" + e.getKey() + "' has dtype " + p.scalar_type());
            }
            String other = seen.putIfAbsent(ParameterState.identityOf(p), e.getKey());
            if (other != null) {
                throw new IllegalArgumentException("parameter '" + e.getKey() + "' is the same tensor as '" + other
                        + "'; list each tensor once");
            }
        }
        this.referenceLr = lr0;
        List<String> n = new ArrayList<>();
        List<Tensor> p = new ArrayList<>();
        List<Tensor> m = new ArrayList<>();
        List<Tensor> prev = new ArrayList<>();
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            for (Map.Entry<String, Tensor> e : named.entrySet()) {
                n.add(e.getKey());
                p.add(NativeLifetime.outliveScope(new Tensor(e.getValue())));
                m.add(NativeLifetime.outliveScope(torch.zeros_like(e.getValue())));
                prev.add(NativeLifetime.outliveScope(torch.empty_like(e.getValue())));
            }
        }
        this.names = List.copyOf(n);
        this.params = List.copyOf(p);
        this.emas = List.copyOf(m);
        this.previous = List.copyOf(prev);
    }

    /**
     * Wraps an optimizer; its lr of group {@code config.lrGroup()} now is the reference of β's scale.
     *
     * @param inner           the optimizer that steps
     * @param namedParameters the parameters to look ahead with, by name ({@code model.named_parameters()}); the
     *                        names key the state file
     * @param config          the settings
     * @return the wrapper
     * @throws IllegalArgumentException      if there is no parameter, one is listed twice, undefined or not of a
     *                                       floating-point dtype, {@code lrGroup} is not a group of {@code inner},
     *                                       or {@code scaleByLr} and that group's lr is not {@code > 0}
     * @throws UnsupportedOperationException if a parameter is sparse or complex
     */
    public static EmaNesterov wrap(TrainingOptimizer inner, StringTensorDict namedParameters,
                                   EmaNesterovConfig config) {
        Objects.requireNonNull(namedParameters, "namedParameters must not be null");
        Map<String, Tensor> named = new LinkedHashMap<>();
        try (PointerScope scope = new PointerScope()) {
            for (long i = 0; i < namedParameters.size(); i++) {
                StringTensorDictItem item = namedParameters.get(i);
                named.put(item.key().getString(), NativeLifetime.outliveScope(new Tensor(item.value())));
            }
        }
        return new EmaNesterov(inner, named, config);
    }

    /**
     * Wraps an optimizer ({@link #wrap(TrainingOptimizer, StringTensorDict, EmaNesterovConfig)}) with the
     * parameters as an ordered map.
     *
     * @param inner           the optimizer that steps
     * @param namedParameters the parameters by name, in a stable order
     * @param config          the settings
     * @return the wrapper
     * @throws IllegalArgumentException      as the other {@code wrap}
     * @throws UnsupportedOperationException if a parameter is sparse or complex
     */
    public static EmaNesterov wrap(TrainingOptimizer inner, Map<String, Tensor> namedParameters,
                                   EmaNesterovConfig config) {
        return new EmaNesterov(inner, new LinkedHashMap<>(Objects.requireNonNull(namedParameters,
                "namedParameters must not be null")), config);
    }

    /**
     * Moves every parameter to the lookahead point {@code θ_t + β_t · m_t} (no move outside the window or while
     * {@code β_t = 0}); call it once per step, before the forward pass.
     *
     * @throws IllegalStateException if it was already called for this step, or the wrapper is closed; nothing
     *                               changes then
     */
    public void lookahead() {
        requireOpen();
        if (pending) {
            throw new IllegalStateException("lookahead() was already called for step " + stepCount
                    + "; call step() after the backward pass first");
        }
        double beta = betaAt(stepCount);
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            Scalar alpha = new Scalar(beta);
            for (int i = 0; i < params.size(); i++) {
                Tensor p = params.get(i);
                previous.get(i).copy_(p);
                if (beta != 0) {
                    p.add_(emas.get(i), alpha);
                }
            }
        }
        lastLookahead = beta;
        pending = true;
    }

    /**
     * Steps the wrapped optimizer from the lookahead point, then updates every parameter's EMA with its increment
     * since {@link #lookahead()}: {@code m = ema · m + (1 − ema) · (θ_{t+1} − θ_t)}.
     *
     * @throws IllegalStateException if {@link #lookahead()} was not called for this step (nothing changes then),
     *                               the wrapper is closed, or the wrapped optimizer refuses the step (then it is
     *                               as that optimizer leaves it, the parameters at the lookahead point, and
     *                               {@code step()} may be called again)
     */
    @Override
    public void step() {
        requireOpen();
        if (!pending) {
            throw new IllegalStateException("step() needs lookahead() before the forward pass of step " + stepCount
                    + ", so that the gradient is taken at the lookahead point");
        }
        inner.step();
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            Scalar weight = new Scalar(1 - config.ema());
            for (int i = 0; i < params.size(); i++) {
                // In place, so a step allocates nothing: −θ_t + θ_{t+1} is exactly θ_{t+1} − θ_t.
                Tensor increment = previous.get(i).neg_().add_(params.get(i));
                emas.get(i).lerp_(increment, weight);
            }
        }
        stepCount++;
        pending = false;
    }

    /** Clears every gradient through the wrapped optimizer. */
    @Override
    public void zeroGrad() {
        inner.zeroGrad();
    }

    /**
     * The wrapped optimizer's group count.
     *
     * @return the group count
     */
    @Override
    public int groupCount() {
        return inner.groupCount();
    }

    /**
     * The wrapped optimizer's lr of a group.
     *
     * @param group the group index
     * @return the lr
     * @throws IllegalArgumentException if the index is out of range
     */
    @Override
    public double lr(int group) {
        return inner.lr(group);
    }

    /**
     * Sets the wrapped optimizer's lr of a group.
     *
     * @param group the group index
     * @param lr    the lr
     * @throws IllegalArgumentException if the index or the lr is invalid; nothing changes then
     */
    @Override
    public void setLr(int group, double lr) {
        inner.setLr(group, lr);
    }

    /**
     * The wrapped optimizer's schedule record.
     *
     * @return the record, if it keeps one
     */
    @Override
    public Optional<ScheduleRecord> scheduleRecord() {
        return inner.scheduleRecord();
    }

    /**
     * Keeps a schedule record in the wrapped optimizer.
     *
     * @param record the record
     * @throws IllegalArgumentException if the record does not hold one base lr per group
     */
    @Override
    public void recordSchedule(ScheduleRecord record) {
        inner.recordSchedule(record);
    }

    /**
     * The number of completed steps.
     *
     * @return the step count
     */
    public long stepCount() {
        return stepCount;
    }

    /**
     * The β of the last {@link #lookahead()}: 0 before the first, outside the window, or while the lr is 0.
     *
     * @return β_t of the last lookahead
     */
    public double lastLookahead() {
        return lastLookahead;
    }

    /**
     * The settings.
     *
     * @return the config
     */
    public EmaNesterovConfig config() {
        return config;
    }

    /**
     * A copy of a parameter's EMA of increments, {@code m}.
     *
     * @param name the parameter's name
     * @return a new tensor of the caller's scope
     * @throws IllegalArgumentException if no parameter has that name
     * @throws IllegalStateException    if the wrapper is closed
     */
    public Tensor ema(String name) {
        Objects.requireNonNull(name, "name must not be null");
        requireOpen();
        int i = names.indexOf(name);
        if (i < 0) {
            throw new IllegalArgumentException("name must be a parameter this wrapper wraps; '" + name + "' is not "
                    + "(it wraps " + names + ")");
        }
        return emas.get(i).detach().clone();
    }

    /**
     * Writes this wrapper's state (step count, reference lr, {@code m} per parameter) to its own file, atomically
     * ({@link EmaNesterovStateFile}); not the wrapped optimizer's state, nor the parameters.
     *
     * @param path where to save
     * @throws IllegalStateException        if a lookahead is open (call it after {@code step()}), or the wrapper is
     *                                      closed
     * @throws java.io.UncheckedIOException if the file cannot be written; {@code path} is then unchanged
     */
    public void save(Path path) {
        Objects.requireNonNull(path, "path must not be null");
        requireOpen();
        requireBetweenSteps("save");
        Map<String, Tensor> ema = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            ema.put(names.get(i), emas.get(i));
        }
        try (PointerScope scope = new PointerScope()) {
            EmaNesterovStateFile.write(path, new EmaNesterovStateFile.Contents(stepCount, referenceLr, ema));
        }
    }

    /**
     * Restores a state saved by {@link #save(Path)}: the step count, the reference lr and every parameter's
     * {@code m}, bit for bit. The file must hold exactly this wrapper's parameter names, each with its parameter's
     * shape and dtype.
     *
     * @param path the file
     * @throws dev.muon.state.StateFileException if the file is missing, truncated, corrupt or malformed
     * @throws IllegalStateException             if it does not fit this wrapper (naming the parameter), a lookahead
     *                                           is open, or the wrapper is closed; in every case nothing changes
     */
    public void load(Path path) {
        Objects.requireNonNull(path, "path must not be null");
        requireOpen();
        requireBetweenSteps("load");
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            EmaNesterovStateFile.Contents read = EmaNesterovStateFile.read(path);
            for (String name : read.ema().keySet()) {
                if (!names.contains(name)) {
                    throw new IllegalStateException(path + ": parameter '" + name + "' is not wrapped here");
                }
            }
            for (int i = 0; i < names.size(); i++) {
                Tensor t = read.ema().get(names.get(i));
                Tensor p = params.get(i);
                if (t == null) {
                    throw new IllegalStateException(path + ": parameter '" + names.get(i) + "' has no ema tensor");
                }
                if (!Arrays.equals(t.shape(), p.shape()) || t.scalar_type().value != p.scalar_type().value) {
                    throw new IllegalStateException(path + ": parameter '" + names.get(i) + "' has ema of shape "
                            + Arrays.toString(t.shape()) + " and dtype " + t.scalar_type() + ", the parameter "
                            + Arrays.toString(p.shape()) + " and " + p.scalar_type());
                }
            }
            if (config.scaleByLr() && !(read.referenceLr() > 0)) {
                throw new IllegalStateException(path + ": reference_lr must be > 0 with scaleByLr, got "
                        + read.referenceLr());
            }
            for (int i = 0; i < names.size(); i++) {
                emas.get(i).copy_(read.ema().get(names.get(i)));
            }
            stepCount = read.step();
            referenceLr = read.referenceLr();
        }
    }

    /** Frees {@code m} and the workspace; a second call does nothing. The parameters stay as they are. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            emas.forEach(Tensor::close);
            previous.forEach(Tensor::close);
            params.forEach(Tensor::close);
        }
    }

    private double betaAt(long t) {
        if (!config.looksAheadAt(t)) {
            return 0;
        }
        // The reference's order: lookahead_stepsize * (lr / initial_lr).
        return config.scaleByLr() ? config.lookahead() * (inner.lr(config.lrGroup()) / referenceLr)
                : config.lookahead();
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("this EmaNesterov is closed");
        }
    }

    private void requireBetweenSteps(String what) {
        if (pending) {
            throw new IllegalStateException(what + " between step() and the next lookahead(): the parameters are "
                    + "at the lookahead point of step " + stepCount);
        }
    }
}
