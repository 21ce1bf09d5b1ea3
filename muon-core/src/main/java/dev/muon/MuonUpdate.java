package dev.muon;

import dev.muon.internal.TorchNatives;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Muon's update as one stateless call, PyTorch 2.15's {@code torch.optim.functional.muon}: the caller owns the
 * parameters, the gradients and the momentum buffers, and passes the hyperparameters as a {@link MuonConfig}. Each
 * parameter with a gradient gets exactly the update {@link Muon#step()} gives it, bit for bit, and its buffer
 * advances in place exactly as {@link Muon#momentumBuffer}'s does:
 * <pre>
 *   B = B.lerp(g, 1 − μ);  U = nesterov ? g.lerp(B, μ) : B
 *   O = NS(U)                                   (or the exact SVD reference)
 *   p = p·(1 − lr·weightDecay)                  (or cautious: only where O ⊙ p &gt;= 0)
 *   p = p − lr·ratio(rows, cols)·extraScale·O
 * </pre>
 * It runs the optimizer's own update machinery ({@link UpdateRecipe}'s mapping to libtorch, the orthogonalizer
 * and the fused CPU or CUDA stages {@code Muon} would choose), so there is one arithmetic, not two.
 *
 * <p>What the call cannot take: a setting whose state does not fit in one momentum buffer of the parameter's shape
 * and dtype is refused, naming it ({@code norMuon}: a per-row second moment; {@code hyperball}: a radius fixed when
 * an optimizer is built; {@code momentumPrecision = BFLOAT16}: a buffer of another dtype). Each parameter is
 * updated on its own, as muon-djl does: {@code batchSameShape} batches a {@code Muon}'s Newton–Schulz calls and
 * has nothing to batch here (a {@code Muon} built with it off gives the same bits). Row splits and QK-Clip are
 * set on a {@link Muon.Builder}, and there is no step count: a schedule is the caller's, through
 * {@code config.withLr(..)}.
 *
 * <p>Every argument is checked before anything changes: a refused call leaves parameters and buffers as they
 * were. The Newton–Schulz workspaces and the step's reusable tensors are made at a thread's first call for a shape
 * and reused by its later calls, as a {@code Muon} reuses them for its lifetime; a call's other native
 * temporaries are released when it returns. Calls from different threads share nothing.
 *
 * <pre>{@code
 * List<Tensor> buffers = params.stream().map(torch::zeros_like).toList();   // yours to keep and checkpoint
 * for (...) {
 *     ... backward ...
 *     MuonUpdate.apply(params, grads, buffers, MuonConfig.defaults().withLr(0.02));
 * }
 * }</pre>
 */
public final class MuonUpdate {
    static {
        // Before anything here loads libtorch: see TorchNatives for the crash this prevents.
        TorchNatives.extract();
    }

    /** How refusals name this entry point ({@link UpdateRecipe#refused}). */
    static final String ENTRY = "MuonUpdate.apply";

    /** Each thread's reusable parts, the ones a {@code Muon} keeps for its lifetime. */
    private static final ThreadLocal<Workshop> WORKSHOP = ThreadLocal.withInitial(Workshop::new);

    /**
     * What {@code MuonAssembly} makes once per optimizer: the orthogonalizers (with their workspaces per shape), the
     * fused stages and the reusable tensors. One per thread, since none of them may be used by two at once.
     */
    private static final class Workshop {
        final OrthogonalizerSelection orthogonalizers = new OrthogonalizerSelection();
        final FusedKernelSelection fusedKernels = new FusedKernelSelection();
        final Scratch scratch = new Scratch();
    }

    private MuonUpdate() {
    }

    /**
     * Applies one Muon step to each parameter that has a gradient, advancing its momentum buffer in place; a
     * parameter whose gradient is null or undefined is skipped, buffer and all, as {@link Muon#step()} skips it.
     *
     * @param params          the parameters, updated in place: 2-D, or conv filters and stacks of matrices where
     *                        {@code config} allows them ({@link MuonConfig#convWeights()},
     *                        {@link MuonConfig#stackedWeights()})
     * @param grads           one gradient per parameter, of its shape, dtype and device, or null (undefined) for
     *                        none
     * @param momentumBuffers one buffer per parameter, the caller's: contiguous, of its parameter's shape, dtype and
     *                        device, zeros before the first update ({@code torch.zeros_like(p)})
     * @param config          the hyperparameters ({@code lr}, {@code weightDecay}, {@code momentum},
     *                        {@code nesterov}, the Newton–Schulz settings, {@code adjustLr}, {@code extraScale}) and
     *                        the variant settings
     * @throws NullPointerException          if a list or {@code config} is null
     * @throws IllegalArgumentException      if {@code config} has a setting this call refuses, the lists' sizes
     *                                       differ, a parameter is missing or of a dtype or shape Muon refuses, a
     *                                       gradient or buffer does not match its parameter, or two of the tensors
     *                                       updated in place share memory; each message names the index, the rule
     *                                       and the value, and nothing changes
     * @throws UnsupportedOperationException if a gradient is sparse or complex; nothing changes
     */
    public static void apply(List<Tensor> params, List<Tensor> grads, List<Tensor> momentumBuffers,
                             MuonConfig config) {
        Objects.requireNonNull(params, "params must not be null");
        Objects.requireNonNull(grads, "grads must not be null");
        Objects.requireNonNull(momentumBuffers, "momentumBuffers must not be null");
        Objects.requireNonNull(config, "config must not be null");
        UpdateRecipe recipe = checkedRecipe(config);
        if (grads.size() != params.size() || momentumBuffers.size() != params.size()) {
            throw new IllegalArgumentException("params, grads and momentumBuffers must have the same size, got "
                    + params.size() + ", " + grads.size() + " and " + momentumBuffers.size());
        }
        Workshop workshop = WORKSHOP.get();
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            List<ParameterState> states = new ArrayList<>(params.size());
            try {
                List<UpdatePlan> plans = new ArrayList<>(params.size());
                List<Tensor> usedGrads = new ArrayList<>(params.size());
                List<Tensor> inPlace = new ArrayList<>(2 * params.size());
                List<String> labels = new ArrayList<>(2 * params.size());
                for (int i = 0; i < params.size(); i++) {
                    String label = "params[" + i + "]";
                    Tensor p = params.get(i);
                    if (p == null || !p.defined()) {
                        throw new IllegalArgumentException(label + " is null or undefined");
                    }
                    MatrixLayout layout = MatrixLayout.of(p, config, label);
                    usedGrads.add(checkedGrad(grads.get(i), p, i));
                    Tensor buffer = checkedBuffer(momentumBuffers.get(i), p, i);
                    inPlace.add(p);
                    labels.add(label);
                    inPlace.add(buffer);
                    labels.add("momentumBuffers[" + i + "]");
                    ParameterState state = new ParameterState(p, layout,
                            workshop.orthogonalizers.forParameter(config, p.device()), label, label,
                            workshop.fusedKernels.forParameter(config, layout.matrixView(p), label), null,
                            recipe.buffers());
                    states.add(state);
                    state.install(recipe.momentum().buffer(), buffer);
                    // No NorMuon workspaces: norMuon is refused above. Made here, with the checks: a plan that
                    // refused its parameter must do so before the first parameter changes.
                    plans.add(UpdatePlan.of(config, state, workshop.scratch, null));
                }
                MuonAssembly.checkNoSharedMemory(inPlace, labels, "each is updated in place, so none may overlap "
                        + "another");
                UpdateSlots.Step step = new UpdateSlots.Step(config);
                for (int i = 0; i < states.size(); i++) {
                    Tensor grad = usedGrads.get(i);
                    if (grad != null) {
                        PlannedUpdates.updateAlone(states.get(i), plans.get(i), grad, step);
                    }
                }
            } finally {
                for (ParameterState state : states) {
                    // The caller's buffer stays the caller's: only the handles made here are closed.
                    state.evict(recipe.momentum().buffer());
                    state.matrix.close();
                    state.param.close();
                }
            }
        }
    }

    /**
     * The recipe of {@code config}, if every element keeps no state beyond one momentum buffer of the parameter's
     * dtype.
     *
     * @throws IllegalArgumentException naming the setting it refuses
     */
    private static UpdateRecipe checkedRecipe(MuonConfig config) {
        UpdateRecipe recipe = UpdateRecipe.of(config);
        // One exhaustive switch expression per element: an element added to the recipe is a compile error here
        // until it is accepted (null) or refused with its reason.
        refuseIf(recipe.momentum(), switch (recipe.momentum()) {
            case EMA -> null;
            case EMA_BFLOAT16_STORED -> "its buffer is stored in bfloat16, not in the parameter's dtype; keep "
                    + "momentumPrecision = PARAMETER, or use Muon";
            case MUOWN_DIRECTION -> "its row magnitudes, their Adam moments and its step count are state that apply "
                    + "has no argument for; use Muon";
        });
        refuseIf(recipe.orthogonalizer(), switch (recipe.orthogonalizer()) {
            case NEWTON_SCHULZ, EXACT_SVD -> null;
        });
        refuseIf(recipe.rowScaling(), switch (recipe.rowScaling()) {
            case NONE -> null;
            case NORMUON -> "its per-row second moment is state that apply has no argument for; use Muon";
        });
        refuseIf(recipe.applier(), switch (recipe.applier()) {
            // Muown is refused with its momentum element above.
            case DECOUPLED_DECAY, CAUTIOUS_DECAY, MUOWN -> null;
        });
        refuseIf(recipe.weightHook(), switch (recipe.weightHook()) {
            // The other hooks keep no state: each measures the parameter within the call.
            case NONE, RADIAL_BRAKE, RELATIVE_UPDATE, UPDATE_FLOOR, UPDATE_FLOOR_PER_ROW -> null;
            case HYPERBALL -> "its radius is each parameter's norm when an optimizer is built, state that apply has "
                    + "no argument for; use Muon";
        });
        return recipe;
    }

    /** Throws {@code element}'s refusal when there is a reason, in the order the elements run. */
    private static void refuseIf(UpdateRecipe.Element element, String reason) {
        if (reason != null) {
            throw UpdateRecipe.refused(element, ENTRY, reason);
        }
    }

    /**
     * The gradient to apply to parameter {@code i}, or null when it has none, checked as {@link GradientCheck}
     * checks a {@code Muon}'s, the mismatches as bad arguments.
     */
    private static Tensor checkedGrad(Tensor grad, Tensor param, int i) {
        if (grad == null || !grad.defined()) {
            return null;
        }
        String label = "grads[" + i + "]";
        if (grad.is_sparse() || grad.layout().value != torch.Layout.Strided.value) {
            throw new UnsupportedOperationException("Muon supports dense (strided) gradients only; " + label
                    + " has layout " + grad.layout());
        }
        if (grad.is_complex()) {
            throw new UnsupportedOperationException("Muon does not support complex gradients; " + label
                    + " has dtype " + grad.scalar_type());
        }
        requireLike(grad, param, label, i, "a gradient");
        return grad;
    }

    /** The momentum buffer of parameter {@code i}, checked. */
    private static Tensor checkedBuffer(Tensor buffer, Tensor param, int i) {
        String label = "momentumBuffers[" + i + "]";
        if (buffer == null || !buffer.defined()) {
            throw new IllegalArgumentException(label + " is null or undefined; every parameter needs its momentum "
                    + "buffer, zeros before its first update");
        }
        if (buffer.layout().value != torch.Layout.Strided.value) {
            throw new IllegalArgumentException(label + " must be a dense (strided) tensor, got layout "
                    + buffer.layout());
        }
        // Muon's own buffer (UpdateRecipe.MOMENTUM, the one momentum this call takes): the parameter's shape and
        // dtype, on its device.
        requireLike(buffer, param, label, i, "a momentum buffer");
        if (!buffer.is_contiguous()) {
            throw new IllegalArgumentException(label + " must be contiguous, as Muon's own buffer is; it has "
                    + "strides " + Arrays.toString(buffer.strides().vec().get()));
        }
        return buffer;
    }

    /** Refuses {@code t} unless it has the shape, dtype and device of {@code params[i]}. */
    private static void requireLike(Tensor t, Tensor param, String label, int i, String what) {
        String paramLabel = "params[" + i + "]";
        if (!Arrays.equals(t.shape(), param.shape())) {
            throw new IllegalArgumentException(label + " has shape " + Arrays.toString(t.shape()) + " but "
                    + paramLabel + " has shape " + Arrays.toString(param.shape()) + "; " + what
                    + " must have its parameter's shape");
        }
        if (t.scalar_type().value != param.scalar_type().value) {
            throw new IllegalArgumentException(label + " has dtype " + t.scalar_type() + " but " + paramLabel
                    + " has dtype " + param.scalar_type() + "; " + what + " must have its parameter's dtype");
        }
        if (!t.device().equals(param.device())) {
            throw new IllegalArgumentException(label + " is on " + t.device().str().getString() + " but "
                    + paramLabel + " is on " + param.device().str().getString() + "; " + what
                    + " must be on its parameter's device");
        }
    }
}
