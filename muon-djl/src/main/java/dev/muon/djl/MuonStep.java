package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.AssignmentRule;
import dev.muon.BufferSpec;
import dev.muon.HyperballConfig;
import dev.muon.MuonConfig;
import dev.muon.NorMuonConfig;
import dev.muon.RadialBrakeConfig;
import dev.muon.UpdateFloorConfig;
import dev.muon.UpdateRecipe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Muon's update of one parameter on DJL arrays: muon-core's {@link UpdateRecipe} of the configuration, each element
 * mapped to {@code NDArray} operations when the optimizer is built, or refused there, naming the setting
 * ({@link UpdateRecipe#refused}). With muon-core's formulas (its golden README):
 * <pre>
 *   B = B.lerp(g, 1 − μ)                      EMA momentum (bfloat16 storage refused)
 *   U = g.lerp(B, μ) if nesterov, else B
 *   O = NS(U)                                 on the matrix view: a conv filter flattened, a stack batched;
 *                                             float32 or float64; muon-core's native float32 kernels where they
 *                                             run ({@link NsKernels}), else plain products (the SVD, bfloat16 and the
 *                                             symmetric and Gram kernels refused)
 *   O = O, or NorMuon's row scaling           then the update is p − lr·0.2·extraScale · O
 *   p = p·(1 − lr·weightDecay)                decoupled, the unadjusted lr; with cautious weight decay only
 *                                             where O ⊙ p >= 0
 *   p = p − lr·ratio·extraScale · O
 *   or, with Hyperball: p = R·(p − lr·R·O/‖O‖)/‖·‖, R the fixed radius or ‖p‖ before the step
 *   around decay and step, a weight hook:     RadialBrake, RelativeUpdate or an update floor, as muon-core's
 *                                             (p₀ the parameter before the update, norms in float32, float64 for
 *                                             a float64 parameter)
 * </pre>
 * {@code lerp} follows {@code torch.lerp}'s two branches, so the rounding is PyTorch's.
 *
 * <p>State per parameter and device: the momentum buffer in the parameter's dtype and, with NorMuon, the per-row
 * second moment in float32 (float64 for a float64 parameter). It is created by {@link #state} outside any
 * {@link NDScope}, attached to a manager of the caller's; {@link #apply} runs inside one.
 */
final class MuonStep {
    private static final Logger LOG = LoggerFactory.getLogger(MuonStep.class);
    /** This binding's name in refusals. */
    static final String BINDING = DjlSupport.BINDING.module();
    /** Why Muown is refused here. */
    private static final String MUOWN_UNMAPPED = "muon-djl has no mapping of Muown's row magnitudes, their Adam "
            + "moments and the direction's own gradient; muon-core runs it";

    /** {@code O} before it is applied: as it is, or scaled by rows with the parameter's second moment. */
    private interface RowScaling {
        NDArray scale(NDArray o, State state, AssignmentRule.Matrix matrix);
    }

    /** Decay and step: {@code o} in the iteration's dtype, the parameter's shape. */
    private interface Applier {
        void apply(NDArray weight, NDArray o, double lr, double scaledLr, State state, AssignmentRule.Matrix matrix);
    }

    /** The config: its hyperparameters change on a checkpoint's load ({@link #hyperparameters}), its recipe never. */
    private MuonConfig config;
    private final RowScaling rowScaling;
    private final Applier applier;
    private final NsKernels kernels;
    /** The elements of the update, fixed at build (a load changes hyperparameters only). */
    private final UpdateRecipe recipe;
    /** Each parameter's declared buffers on each device, by {@link BufferSpec#key()} in the recipe's order. */
    private final Map<ParameterKey, Map<String, NDArray>> held = new HashMap<>();
    /** A checkpoint's buffers by parameter id and key, which each device's copy starts from. */
    private final Map<String, Map<String, NDArray>> loaded = new HashMap<>();

    /** Hyperball's norm dtype per parameter and device, chosen at its first update (muon-core's rule). */
    private final Map<ParameterKey, DataType> normTypes = new HashMap<>();

    /**
     * The state of one parameter on one device.
     *
     * @param buffers  its declared buffers by key
     * @param normType the dtype of Hyperball's norms, or null without Hyperball
     */
    record State(Map<String, NDArray> buffers, DataType normType) {
        /** The buffer a recipe element declared. */
        NDArray buffer(BufferSpec spec) {
            return buffers.get(spec.key());
        }
    }

    /**
     * A step for one configuration: maps each element of its {@link UpdateRecipe} to this binding's operations.
     *
     * @param config the configuration
     * @throws IllegalArgumentException naming the setting, for an element muon-djl has no operation for
     */
    MuonStep(MuonConfig config) {
        this.config = config;
        this.recipe = UpdateRecipe.of(config);
        switch (recipe.momentum()) {
            case EMA -> { }
            case EMA_BFLOAT16_STORED -> throw UpdateRecipe.refused(recipe.momentum(), BINDING, "DJL's bfloat16 "
                    + "arrays abort the JVM, so the momentum buffer cannot be stored in bfloat16");
            case MUOWN_DIRECTION -> throw UpdateRecipe.refused(recipe.momentum(), BINDING, MUOWN_UNMAPPED);
        }
        switch (recipe.orthogonalizer()) {
            case NEWTON_SCHULZ -> requireIteration(recipe);
            case EXACT_SVD -> throw UpdateRecipe.refused(recipe.orthogonalizer(), BINDING,
                    "DJL's NDArray API has no SVD");
        }
        this.kernels = new NsKernels(config.newtonSchulz());
        this.rowScaling = switch (recipe.rowScaling()) {
            case NONE -> (o, state, matrix) -> o;
            // The second moment is the buffer the element declares.
            case NORMUON -> (o, state, matrix) -> normalizeRows(o, state.buffer(recipe.rowScaling().buffers().get(0)),
                    this.config.norMuon(), matrix);
        };
        Applier decay = switch (recipe.applier()) {
            case DECOUPLED_DECAY -> (weight, o, lr, scaledLr, state, matrix) -> {
                if (this.config.weightDecay() != 0) {
                    weight.muli(1 - lr * this.config.weightDecay());
                }
                step(weight, o, scaledLr);
            };
            case CAUTIOUS_DECAY -> (weight, o, lr, scaledLr, state, matrix) -> {
                if (this.config.weightDecay() != 0) {
                    // The mask from the parameter before the step, as muon-core forms it: O (in its own dtype)
                    // times p.
                    NDArray agree = o.mul(weight).gte(0).toType(weight.getDataType(), false);
                    weight.addi(weight.mul(agree).muli(-lr * this.config.weightDecay()));
                }
                step(weight, o, scaledLr);
            };
            // Refused with its momentum element above.
            case MUOWN -> throw UpdateRecipe.refused(recipe.applier(), BINDING, MUOWN_UNMAPPED);
        };
        this.applier = switch (recipe.weightHook()) {
            case NONE -> decay;
            // In place of the decay, which is 0 with it (MuonConfig's rule).
            case HYPERBALL -> (weight, o, lr, scaledLr, state, matrix) -> hyperball(weight, o, lr,
                    this.config.hyperball(), state.normType());
            case RADIAL_BRAKE -> (weight, o, lr, scaledLr, state, matrix) -> {
                DataType normType = hookNormType(weight);
                NDArray before = normOf(weight, normType);
                decay.apply(weight, o, lr, scaledLr, state, matrix);
                radialBrake(weight, before, this.config.radialBrake(), normType);
            };
            case RELATIVE_UPDATE -> (weight, o, lr, scaledLr, state, matrix) -> decay.apply(weight,
                    relativeUpdate(weight, o, this.config.relativeUpdate().eps()), lr, scaledLr, state, matrix);
            case UPDATE_FLOOR, UPDATE_FLOOR_PER_ROW -> (weight, o, lr, scaledLr, state, matrix) -> decay.apply(weight,
                    updateFloor(weight, o, lr, scaledLr, this.config.updateFloor(), matrix), lr, scaledLr, state,
                    matrix);
        };
    }

    /**
     * The Newton–Schulz settings muon-djl runs: float32 or float64, plain products or muon-core's native symmetric
     * and Gram kernels ({@link NsKernels}).
     */
    private static void requireIteration(UpdateRecipe recipe) {
        switch (recipe.nsPrecision()) {
            case FLOAT32, FLOAT64 -> { }
            case BFLOAT16 -> throw UpdateRecipe.refused("nsPrecision = BFLOAT16", BINDING, "DJL's conversion to "
                    + "bfloat16 aborts the JVM, so Newton-Schulz runs in float32 (the default) or FLOAT64");
        }
        switch (recipe.nsAlgorithm()) {
            // SYMMETRIC and GRAM run muon-core's native float32 kernels: NsKernels refuses them where those cannot.
            case AUTO, GEMM, SYMMETRIC, GRAM -> { }
        }
        switch (recipe.nsPreconditioning()) {
            // AOL: NsIteration's rescaling on DJL's arrays, BufferNewtonSchulz's on the native kernels' buffers.
            case FROBENIUS, AOL -> { }
        }
    }

    /**
     * Sets the parameters up before their first update, as muon-core does at build: a recipe element that needs a
     * check or a change of the parameters before training (Hyperball's: a norm &gt; 0, a fixed radius) does it here,
     * every check before any change.
     *
     * @param weights  the Muon parameters by name
     * @param matrices their matrix views by name
     * @throws IllegalArgumentException naming a parameter the recipe refuses; nothing changed then
     */
    void prepare(Map<String, NDArray> weights, Map<String, AssignmentRule.Matrix> matrices) {
        weights.forEach((name, weight) -> requireDescribed(name, weight.getShape().getShape(), matrices.get(name)));
        HyperballConfig hyperball = config.hyperball();
        if (hyperball == null) {
            return;
        }
        // Every check first, each parameter's norm dtype kept for the rescale that follows them.
        Map<String, DataType> normTypeOf = new HashMap<>();
        weights.forEach((name, weight) -> {
            if (weight.getShape().size() == 0) {
                return;
            }
            try (NDScope scope = new NDScope()) {
                scope.suppressNotUsedWarning();
                NDArray wide = weight.toType(DataType.FLOAT64, false);
                double norm = scalar(wide.norm());
                if (norm == 0) {
                    throw new IllegalArgumentException("hyperball needs every Muon parameter's norm to be > 0 (it is "
                            + "held on its sphere); parameter '" + name + "' has norm 0");
                }
                hyperball.checkParameter("parameter '" + name + "'", weight.getDataType().toString(), norm,
                        scalar(wide.abs().max()));
                normTypeOf.put(name, normType(hyperball, weight.getDataType(), norm));
            }
        });
        if (!hyperball.fixedRadius()) {
            return;
        }
        weights.forEach((name, weight) -> {
            if (weight.getShape().size() > 0) {
                try (NDScope scope = new NDScope()) {
                    scope.suppressNotUsedWarning();
                    NDArray norm = normOf(weight, normTypeOf.get(name));
                    double before = scalar(norm);
                    // As muon-core: (1/‖p‖)·R in the norm's dtype, clamped to the parameter's range, then in its dtype.
                    weight.muli(NDArrays.div(1, norm).muli(hyperball.radius())
                            .minimum(largestFinite(weight.getDataType())).toType(weight.getDataType(), false));
                    LOG.info("Muon: hyperball radius {}: parameter '{}' rescaled from norm {} to {}",
                            hyperball.radius(), name, before, hyperball.radius());
                }
            }
        });
    }

    /**
     * Refuses, when the optimizer is built, a parameter one of whose declared buffers checkpoints could not describe:
     * a file reads each buffer's shape from its parameter's ({@link BufferSpec.Shape#of}), and a conv filter flattened
     * from other than 4 dims (DJL's 1-D or 3-D convolutions) keeps one NorMuon entry per filter where the file would
     * read a stack's rows. Decided here, not when the run first saves.
     */
    private void requireDescribed(String name, long[] shape, AssignmentRule.Matrix matrix) {
        for (UpdateRecipe.Element element : recipe.elements()) {
            for (BufferSpec spec : element.buffers()) {
                long[] held = heldShape(spec, shape, matrix);
                long[] described = spec.shape().of(shape);
                if (!Arrays.equals(held, described)) {
                    throw new IllegalArgumentException("parameter '" + name + "' of shape " + Arrays.toString(shape)
                            + ", taken by Muon as a " + matrix.rows() + " x " + matrix.cols() + " matrix, would keep "
                            + "its " + spec.label() + " of shape " + Arrays.toString(held) + ", which checkpoints "
                            + "cannot describe (they read a parameter of " + shape.length + " dims as one of shape "
                            + Arrays.toString(described) + "); send the parameter to AdamW, or change "
                            + element.setting());
                }
            }
        }
    }

    /** The shape a declared buffer has for a parameter of this shape and matrix view. */
    static long[] heldShape(BufferSpec spec, long[] shape, AssignmentRule.Matrix matrix) {
        return switch (spec.shape()) {
            case PARAMETER -> shape.clone();
            case ROWS -> matrix.batch() == 0 ? new long[]{matrix.rows()} : new long[]{matrix.batch(), matrix.rows()};
            case SCALAR -> new long[0];
        };
    }

    /**
     * Hyperball's update: {@code R} the fixed radius or {@code ‖p‖} before the step, {@code p' = p − lr·R·O/‖O‖},
     * {@code p = R·p'/‖p'‖}, the norms floored at eps. As muon-core computes it: the norms and both scale factors are
     * 0-dim arrays in float32 (float64 for a float64 parameter), never read back to the host, and each factor is
     * rounded to the parameter's dtype where it meets the parameter. A float32 or float16 norm is never read as a
     * double: DJL reads a double from a float64 array only.
     */
    private static void hyperball(NDArray weight, NDArray o, double lr, HyperballConfig h, DataType normType) {
        DataType dtype = weight.getDataType();
        double normLargest = largestFinite(normType);
        double paramLargest = largestFinite(dtype);
        NDArray radius = h.fixedRadius() ? null : normOf(weight, normType);
        // −lr·R / max(‖O‖, eps), each factor clamped to the finite range, as muon-core does.
        // ‖O‖ of a float64 O (a float64 iteration on a narrower parameter) in float64, then narrowed, as muon-core.
        NDArray oNorm = updateNorm(o, normType, null);
        NDArray step = NDArrays.div(1, oNorm.maximum(h.eps()));
        step = radius == null ? step.muli(-lr * h.radius()) : step.muli(radius).minimum(normLargest).muli(-lr);
        step = step.clip(-paramLargest, paramLargest);
        weight.addi(o.toType(dtype, false).mul(step.toType(dtype, false)));
        // R / max(‖p'‖, eps)
        NDArray scale = NDArrays.div(1, normOf(weight, normType).maximum(h.eps()));
        scale = radius == null ? scale.muli(h.radius()) : scale.muli(radius);
        weight.muli(scale.minimum(paramLargest).toType(dtype, false));
    }

    /** The dtype of a weight hook's norms, as muon-core's: float64 for a float64 parameter, else float32. */
    private static DataType hookNormType(NDArray weight) {
        return weight.getDataType() == DataType.FLOAT64 ? DataType.FLOAT64 : DataType.FLOAT32;
    }

    /**
     * RadialBrake after the update (muon-core's {@code WeightHookApplier}): {@code p ← p·(n₀ + s·(n₁ − n₀))/max(n₁,
     * eps)}, {@code s} chosen on the device (a mask of {@code n₁ > n₀}, each scale times its side of it, so each is
     * taken exactly), the factor clamped to the parameter's finite range and rounded to its dtype.
     */
    private static void radialBrake(NDArray weight, NDArray before, RadialBrakeConfig brake, DataType normType) {
        NDArray after = normOf(weight, normType);
        NDArray outward = after.gt(before).toType(normType, false);
        NDArray s = outward.mul(brake.outwardScale()).addi(NDArrays.sub(1, outward).muli(brake.inwardScale()));
        NDArray factor = after.sub(before).muli(s).addi(before).divi(after.maximum(brake.eps()));
        double largest = largestFinite(weight.getDataType());
        weight.muli(factor.clip(-largest, largest).toType(weight.getDataType(), false));
    }

    /**
     * RelativeUpdate before the step: {@code O·‖p₀‖/‖O‖}, 0 where either norm is below eps (a mask, so a zero is
     * exact), the factor clamped to the parameter's finite range and rounded to {@code O}'s dtype.
     */
    private static NDArray relativeUpdate(NDArray weight, NDArray o, double eps) {
        DataType normType = hookNormType(weight);
        NDArray weightNorm = normOf(weight, normType);
        NDArray updateNorm = updateNorm(o, normType, null);
        NDArray kept = weightNorm.gte(eps).logicalAnd(updateNorm.gte(eps)).toType(normType, false);
        double largest = largestFinite(weight.getDataType());
        NDArray scale = weightNorm.div(updateNorm.maximum(eps)).muli(kept).clip(-largest, largest);
        return o.mul(scale.toType(o.getDataType(), false));
    }

    /**
     * The update floor before the step: {@code O·max(1, lr·floor·‖p₀‖/max(lr'·‖O‖, eps))}, over the whole parameter
     * or per row of its matrix view, the factor clamped to the parameter's finite range and rounded to {@code O}'s
     * dtype.
     */
    private static NDArray updateFloor(NDArray weight, NDArray o, double lr, double scaledLr,
                                       UpdateFloorConfig floor, AssignmentRule.Matrix matrix) {
        DataType normType = hookNormType(weight);
        AssignmentRule.Matrix rows = floor.perRow() ? matrix : null;
        NDArray weightNorm = rows == null ? normOf(weight, normType) : rowNorms(weight, normType, rows);
        NDArray factor = weightNorm.muli(floor.floor()).muli(lr).divi(updateNorm(o, normType, rows).muli(scaledLr)
                .maximum(floor.eps())).maximum(1.0);
        double largest = largestFinite(weight.getDataType());
        factor = factor.clip(-largest, largest).toType(o.getDataType(), false);
        return rows == null ? o.mul(factor) : matrixView(o, rows).mul(factor).reshape(o.getShape());
    }

    /**
     * ‖O‖ in the norms' dtype, whole or per row: an {@code O} in float64 (a float64 iteration on a narrower
     * parameter) measured in float64 and narrowed, as muon-core does.
     */
    private static NDArray updateNorm(NDArray o, DataType normType, AssignmentRule.Matrix rows) {
        DataType measured = o.getDataType() == DataType.FLOAT64 ? DataType.FLOAT64 : normType;
        NDArray norm = rows == null ? normOf(o, measured) : rowNorms(o, measured, rows);
        return norm.getDataType() == normType ? norm : norm.toType(normType, false);
    }

    /** Each row's norm of an array's matrix view ({@code [rows, 1]}, or {@code [k, rows, 1]} for a stack). */
    private static NDArray rowNorms(NDArray a, DataType normType, AssignmentRule.Matrix matrix) {
        NDArray view = matrixView(a.getDataType() == normType ? a : a.toType(normType, false), matrix);
        return view.norm(new int[]{-1}, true);
    }

    /** An array of the parameter's shape as its matrix view: a conv filter flattened, a stack as it is. */
    private static NDArray matrixView(NDArray a, AssignmentRule.Matrix matrix) {
        return matrix.batch() == 0 ? a.reshape(matrix.rows(), matrix.cols())
                : a.reshape(matrix.batch(), matrix.rows(), matrix.cols());
    }

    /**
     * Hyperball's norm dtype for one parameter: muon-core's rule ({@link HyperballConfig#float64Norms}), from the
     * parameter's float64 norm before its first update.
     */
    private static DataType hyperballNormType(NDArray weight, HyperballConfig h) {
        if (weight.getDataType() == DataType.FLOAT64) {
            return DataType.FLOAT64;
        }
        try (NDScope scope = new NDScope()) {
            scope.suppressNotUsedWarning();
            return normType(h, weight.getDataType(), scalar(weight.toType(DataType.FLOAT64, false).norm()));
        }
    }

    /** Hyperball's norm dtype for a parameter of this dtype and norm (muon-core's rule). */
    private static DataType normType(HyperballConfig h, DataType dtype, double norm) {
        return h.float64Norms(dtype.toString(), norm) ? DataType.FLOAT64 : DataType.FLOAT32;
    }

    /** The largest finite value of a floating-point dtype (muon-core's table). */
    private static double largestFinite(DataType dtype) {
        return HyperballConfig.largestFinite(dtype.toString());
    }

    /** A 0-dim array's value, widened to a double whatever its floating-point dtype. */
    private static double scalar(NDArray zeroDim) {
        return zeroDim.getDataType() == DataType.FLOAT64 ? zeroDim.getDouble()
                : zeroDim.toType(DataType.FLOAT64, false).getDouble();
    }

    /** The Frobenius norm of a whole array, in the given dtype. */
    private static NDArray normOf(NDArray a, DataType normType) {
        return a.getDataType() == normType ? a.norm() : a.toType(normType, false).norm();
    }

    /** {@code p −= scaledLr·O}, with {@code O} in the parameter's dtype. */
    private static void step(NDArray weight, NDArray o, double scaledLr) {
        weight.subi(o.toType(weight.getDataType(), false).muli(scaledLr));
    }

    /**
     * The config: the build's, with the hyperparameters of the last checkpoint loaded ({@link #hyperparameters}).
     *
     * @return the config
     */
    MuonConfig config() {
        return config;
    }

    /**
     * Which products run Newton–Schulz ({@link NsKernels}).
     *
     * @return the choice
     */
    NsKernels kernels() {
        return kernels;
    }

    /**
     * Takes a checkpoint's hyperparameters (lr, weight decay, momentum, Nesterov, lr adjustment, extra scale), as
     * muon-core's restore does; the build settings, which chose the recipe, a load has checked equal.
     *
     * @param values the hyperparameters
     */
    void hyperparameters(dev.muon.MuonHyperparameters values) {
        config = config.withHyperparameters(values);
    }

    /**
     * A parameter's declared buffers on a device, by key: what a checkpoint saves.
     *
     * @param key the parameter and device
     * @return the buffers, empty until the parameter has been updated
     */
    Map<String, NDArray> buffers(ParameterKey key) {
        return java.util.Collections.unmodifiableMap(held.getOrDefault(key, Map.of()));
    }

    /**
     * Replaces the state with a checkpoint's, by parameter id and buffer key: each device's copy of a parameter
     * starts from it at its next update (copied to that device); a parameter the checkpoint holds no state for
     * starts afresh. The previous state is freed.
     *
     * @param buffers each parameter's buffers by id, then by key
     */
    void restore(Map<String, Map<String, NDArray>> buffers) {
        held.values().forEach(b -> b.values().forEach(NDArray::close));
        held.clear();
        loaded.clear();
        loaded.putAll(buffers);
    }

    /**
     * The state of a parameter on a device, created (zeros) at its first update.
     *
     * @param key    the parameter and device
     * @param weight the parameter's array on that device
     * @param matrix its matrix view
     * @param home   the manager that owns the state on that device
     * @return the state
     */
    State state(ParameterKey key, NDArray weight, AssignmentRule.Matrix matrix, NDManager home) {
        Map<String, NDArray> buffers = held.computeIfAbsent(key, k -> {
            Map<String, NDArray> fromFile = loaded.getOrDefault(k.parameterId(), Map.of());
            Map<String, NDArray> made = new java.util.LinkedHashMap<>();
            for (BufferSpec spec : recipe.buffers()) {
                Shape shape = new Shape(heldShape(spec, weight.getShape().getShape(), matrix));
                DataType dtype = DataType.valueOf(spec.dtype().of(weight.getDataType().toString())
                        .toUpperCase(java.util.Locale.ROOT));
                // A buffer of the parameter's shape and dtype is made like it, on the array's own device.
                boolean likeWeight = shape.equals(weight.getShape()) && dtype == weight.getDataType();
                made.put(spec.key(), owned(loadedOrZeros(fromFile.get(spec.key()), weight,
                        () -> likeWeight ? weight.zerosLike() : home.zeros(shape, dtype, weight.getDevice())), home));
            }
            return made;
        });
        DataType normType = config.hyperball() == null ? null
                : normTypes.computeIfAbsent(key, k -> hyperballNormType(weight, config.hyperball()));
        return new State(buffers, normType);
    }

    /** A copy of a checkpoint's array on the weight's device, or new zeros. */
    static NDArray loadedOrZeros(NDArray loaded, NDArray weight, java.util.function.Supplier<NDArray> zeros) {
        return loaded == null ? zeros.get() : loaded.toDevice(weight.getDevice(), true);
    }

    /**
     * State on the weight's device, owned by {@code home} and so freed with it, and never closed by a scope the
     * caller may have open.
     */
    static NDArray owned(NDArray array, NDManager home) {
        array.attach(home);
        NDScope.unregister(array);
        return array;
    }

    /**
     * The momentum buffer of a parameter on a device.
     *
     * @param key the parameter and device
     * @return the buffer, once the parameter has been updated
     */
    Optional<NDArray> momentum(ParameterKey key) {
        return Optional.ofNullable(buffers(key).get(recipe.momentum().buffer().key()));
    }

    /**
     * Updates one parameter in place; call inside an {@link NDScope}, which frees every temporary.
     *
     * @param weight the parameter
     * @param grad   its gradient
     * @param state  its state on the weight's device
     * @param matrix its matrix view
     * @param lr     the learning rate of this step (the config's, or a tracker's)
     */
    void apply(NDArray weight, NDArray grad, State state, AssignmentRule.Matrix matrix, double lr) {
        double mu = config.momentum();
        NDArray buffer = state.buffer(recipe.momentum().buffer());
        lerpInPlace(buffer, grad, 1 - mu);
        NDArray u = config.nesterov() ? lerp(grad, buffer, mu) : buffer;
        Shape shape = weight.getShape();
        // A conv filter of any dims is flattened; a stack is a batch as it is.
        NDArray m = matrix.batch() == 0 && shape.dimension() != 2 ? u.reshape(matrix.rows(), matrix.cols()) : u;
        NDArray o = kernels.orthogonalize(m, matrix);
        o = rowScaling.scale(o, state, matrix).reshape(shape);
        double scaledLr = (lr == config.lr() ? config : config.withLr(lr)).scaledLr(matrix.rows(), matrix.cols());
        applier.apply(weight, o, lr, scaledLr, state, matrix);
    }

    /**
     * NorMuon's neuron-wise normalization (muon-core's {@code NeuronNormalization}): advances the per-row second
     * moment {@code v} and returns the unit-RMS update.
     */
    private static NDArray normalizeRows(NDArray o, NDArray v, NorMuonConfig norMuon, AssignmentRule.Matrix matrix) {
        NDArray u = o.toType(v.getDataType(), true);
        int last = u.getShape().dimension() - 1;
        // mean_cols(O ⊙ O) = ‖row‖² / n, as addcmul(r, r, (1 − beta2)/n) forms it.
        NDArray rowNorms = u.norm(new int[] {last}, false);
        v.muli(norMuon.beta2()).addi(rowNorms.mul((1 - norMuon.beta2()) / matrix.cols()).muli(rowNorms));
        u.divi(v.sqrt().addi(norMuon.eps()).expandDims(last));
        NDArray norm = matrix.batch() == 0 ? u.norm()
                : u.reshape(matrix.batch(), -1).norm(new int[] {1}, true).reshape(matrix.batch(), 1, 1);
        // Only an all-zero update meets the floor: it then stays zero instead of becoming 0/0.
        return u.divi(norm.maximum(Float.MIN_NORMAL))
                .muli(Math.sqrt((double) matrix.rows() * matrix.cols()));
    }

    /** {@code self = self.lerp(end, w)} in place, with {@code torch.lerp}'s branches. */
    private static void lerpInPlace(NDArray self, NDArray end, double w) {
        if (w < 0.5) {
            self.addi(end.sub(self).muli(w));
        } else {
            self.subi(end).muli(1 - w).addi(end);
        }
    }

    /** {@code start.lerp(end, w)} as a new array, with {@code torch.lerp}'s branches. */
    private static NDArray lerp(NDArray start, NDArray end, double w) {
        if (w < 0.5) {
            return start.add(end.sub(start).muli(w));
        }
        return end.sub(end.sub(start).muli(1 - w));
    }
}
