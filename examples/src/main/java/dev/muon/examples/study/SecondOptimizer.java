package dev.muon.examples.study;

import dev.muon.AdamWConfig;
import dev.muon.EmaNesterov;
import dev.muon.EmaNesterovConfig;
import dev.muon.MuonAdamW;
import dev.muon.OptimizerKind;
import dev.muon.examples.AssignmentLog;
import dev.muon.examples.CharTransformer;
import dev.muon.schedule.LibtorchOptimizer;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.OptimizerParamGroup;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A second-study arm's optimizer for one model, driven by the cell's schedule (docs/examples.md, "The arms"):
 * <ul>
 *   <li>{@code adamw}: libtorch's {@code AdamW} on every parameter (β1 0.9, the cell's β2, eps 1e-8, the cell's
 *       weight decay and lr);</li>
 *   <li>{@code adamw_2lr}: the same {@code AdamW} with two param groups, group 0 the hidden matrices (exactly those
 *       {@code MuonAdamW} gives Muon, as its own assignment says) at the cell's second lr, group 1 the rest at its
 *       AdamW lr;</li>
 *   <li>the Muon arms: {@code MuonAdamW} with the arm's Muon side ({@link SecondArm#muonConfig}) at the second lr
 *       and its AdamW side at the cell's AdamW lr, β2 and weight decay; {@code ema_nesterov} wraps it in
 *       {@link EmaNesterov} with {@link EmaNesterovConfig#defaults()}.</li>
 * </ul>
 * Every group follows the schedule through {@link LrScheduler#of(TrainingOptimizer, LrSchedule)}, libtorch's
 * optimizers through {@link LibtorchOptimizer}, each group relative to its own base lr. No gradient clipping.
 *
 * <p>Per step, {@link #beforeForward(long)} sets the step's lrs, clears the gradients and, for
 * {@code ema_nesterov}, moves the parameters to the lookahead point (after the lrs, since the wrapper reads its
 * β from the lr); then the forward and backward passes; then {@link #step()}. Not thread-safe; one per run.
 */
final class SecondOptimizer implements AutoCloseable {
    /** AdamW's β1 and eps in every arm and group. */
    static final double BETA1 = 0.9;
    static final double EPS = 1e-8;

    private final TrainingOptimizer optimizer;
    private final LrScheduler scheduler;
    private final EmaNesterov lookahead;
    private final List<AutoCloseable> owned;

    private SecondOptimizer(TrainingOptimizer optimizer, LrSchedule schedule, EmaNesterov lookahead,
                            List<AutoCloseable> owned) {
        this.optimizer = optimizer;
        // Made after the wrapper, so that EMA-Nesterov's reference lr (its lr_0) is the base lr, not a scheduled one.
        this.scheduler = LrScheduler.of(optimizer, schedule);
        this.lookahead = lookahead;
        this.owned = owned;
    }

    /**
     * Builds the cell's arm for a model.
     *
     * @param model    the model
     * @param cell     the arm and its settings
     * @param schedule the schedule every group follows
     * @return the optimizer, its lrs at their base values until the first {@link #beforeForward}
     */
    static SecondOptimizer build(CharTransformer model, SecondCell cell, LrSchedule schedule) {
        return switch (cell.arm()) {
            case ADAMW -> {
                AdamW adamW = new AdamW(model.parameters(), adamWOptions(cell.adamwLr(), cell.beta2(),
                        cell.weightDecay()));
                yield new SecondOptimizer(LibtorchOptimizer.of(adamW), schedule, null, List.of());
            }
            case ADAMW_2LR -> new SecondOptimizer(LibtorchOptimizer.of(twoGroups(model, cell)), schedule, null,
                    List.of());
            case EMA_NESTEROV -> {
                MuonAdamW muon = muonAdamW(model, cell);
                EmaNesterov wrapped = EmaNesterov.wrap(muon, model.named_parameters(), EmaNesterovConfig.defaults());
                yield new SecondOptimizer(wrapped, schedule, wrapped, List.of(wrapped, muon));
            }
            default -> {
                MuonAdamW muon = muonAdamW(model, cell);
                yield new SecondOptimizer(muon, schedule, null, List.of(muon));
            }
        };
    }

    /**
     * libtorch's AdamW options of the study: β1 {@value #BETA1}, eps {@value #EPS}, AMSGrad off.
     *
     * @param lr          the lr
     * @param beta2       β2
     * @param weightDecay the decoupled weight decay
     * @return the options
     */
    static AdamWOptions adamWOptions(double lr, double beta2, double weightDecay) {
        AdamWOptions options = new AdamWOptions(lr);
        options.betas().put(BetaSlot.FIRST, BETA1).put(1 - BetaSlot.FIRST, beta2);
        options.eps().put(EPS);
        options.weight_decay().put(weightDecay);
        options.amsgrad().put(false);
        return options;
    }

    /**
     * Where β1 sits in the {@code std::tuple<double, double>} behind {@code AdamWOptions::betas()}: the bindings
     * expose the tuple as raw memory, laid out last element first by libstdc++ and not by libc++ or MSVC. Read once
     * from libtorch's defaults (0.9, 0.999), as muon-core's {@code AdamWConfig} reads it.
     */
    private static final class BetaSlot {
        static final int FIRST = new AdamWOptions().betas().get(0) == 0.9 ? 0 : 1;
    }

    /** The Muon arms' optimizer: the arm's Muon side at the second lr, the AdamW side at the cell's settings. */
    private static MuonAdamW muonAdamW(CharTransformer model, SecondCell cell) {
        return MuonAdamW.builder(model.named_parameters())
                .adamW(AdamWConfig.defaults().withLr(cell.adamwLr()).withBetas(BETA1, cell.beta2()).withEps(EPS)
                        .withWeightDecay(cell.weightDecay()))
                .muon(cell.arm().muonConfig(cell.lr2(), cell.weightDecay(), cell.radius()))
                .build();
    }

    /**
     * The names of the parameters {@code MuonAdamW} gives Muon on this model, from its own assignment (its default
     * rules, which the Muon arms use): the hidden matrices.
     *
     * @param model the model
     * @return the names, in the model's order
     */
    static List<String> hiddenMatrices(CharTransformer model) {
        try (MuonAdamW probe = AssignmentLog.quietly(() -> MuonAdamW.builder(model.named_parameters()).build())) {
            return probe.assignment().names(OptimizerKind.MUON);
        }
    }

    /**
     * AdamW-2lr's libtorch optimizer: group 0 the hidden matrices at the second lr, group 1 the rest at the AdamW lr.
     *
     * @param model the model
     * @param cell  the lrs, β2 and weight decay
     * @return the optimizer, at its base lrs
     * @throws IllegalStateException if a name MuonAdamW gives Muon is not among the model's parameters
     */
    static AdamW twoGroups(CharTransformer model, SecondCell cell) {
        List<String> hidden = hiddenMatrices(model);
        List<Tensor> matrices = new ArrayList<>();
        List<Tensor> rest = new ArrayList<>();
        StringTensorDict named = model.named_parameters();
        for (long i = 0; i < named.size(); i++) {
            String name = named.get(i).key().getString();
            // A tensor of its own that shares the parameter's storage: the dictionary's item is a temporary.
            (hidden.contains(name) ? matrices : rest).add(new Tensor(named.get(i).value()));
        }
        if (matrices.size() != hidden.size()) {
            throw new IllegalStateException("the model's parameters hold " + matrices.size() + " of the "
                    + hidden.size() + " hidden matrices MuonAdamW names: " + hidden);
        }
        AdamW adamW = new AdamW(new TensorVector(matrices.toArray(new Tensor[0])), adamWOptions(cell.lr2(),
                cell.beta2(), cell.weightDecay()));
        // A group added without options takes a copy of the optimizer's (β2, eps, weight decay); only its lr differs.
        adamW.add_param_group(new OptimizerParamGroup(new TensorVector(rest.toArray(new Tensor[0]))));
        try (PointerScope scope = new PointerScope()) {
            adamW.param_groups().get(1).options().set_lr(cell.adamwLr());
        }
        return adamW;
    }

    /**
     * Readies 1-based step {@code step}: every group's lr from the schedule at the 0-based step about to be taken,
     * the gradients cleared, and for {@code ema_nesterov} the lookahead, in that order.
     *
     * @param step the step about to be taken, from 1
     */
    void beforeForward(long step) {
        scheduler.apply(step - 1);
        optimizer.zeroGrad();
        if (lookahead != null) {
            lookahead.lookahead();
        }
    }

    /** The step, after the backward pass. */
    void step() {
        optimizer.step();
    }

    /** What the scheduler drives: the libtorch view, {@code MuonAdamW}, or the EMA-Nesterov wrapper. */
    TrainingOptimizer optimizer() {
        return optimizer;
    }

    /** The EMA-Nesterov wrapper of {@code ema_nesterov}; empty for the other arms. */
    Optional<EmaNesterov> lookahead() {
        return Optional.ofNullable(lookahead);
    }

    /** Frees the native state of {@code MuonAdamW} and the wrapper (libtorch's own optimizers go with their scope). */
    @Override
    public void close() {
        for (AutoCloseable c : owned) {
            try {
                c.close();
            } catch (Exception e) {
                throw new IllegalStateException("cannot close " + c, e);
            }
        }
    }
}
