package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.state.ParameterSpec;
import org.bytedeco.pytorch.LongArrayRefOptional;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarOptional;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * The weight-update hooks RadialBrake, RelativeUpdate and the update floor ({@link UpdateRecipe.WeightHook}) around
 * a parameter's decay-and-step applier. Each measures the parameter before its whole update ({@code p₀}) and then:
 * <pre>
 *   RadialBrake     decay and step; then p ← p·(‖p₀‖ + s·(‖p‖ − ‖p₀‖))/max(‖p‖, eps), s outward if ‖p‖ grew
 *   RelativeUpdate  O ← O·‖p₀‖/‖O‖ (0 when either is below eps); then decay and step with the unadjusted lr
 *   update floor    O ← O·max(1, lr·floor·‖p₀‖/max(lr'·‖O‖, eps)), whole or per row; then decay and step
 *                   (lr the group's lr: the floor bounds ‖u‖/‖p₀‖ for the step lr·u, u = (lr'/lr)·O)
 * </pre>
 * A parameter taken as one block (a matrix, a stack, equal row blocks stacked) is hooked at once. The unequal row
 * blocks of a split are gathered first, and the hook acts on the whole parameter once, after the last block: as
 * their steps {@code lr'·O} with lr 1 (each block's lr differs), or, for RelativeUpdate, whose lr is the lr
 * itself, as {@code O} with that lr. The norms are taken on the device in float32 (float64
 * for a float64 parameter) and never read back; each factor is clamped to the finite range of the dtype it meets.
 */
final class WeightHookApplier implements UpdateSlots.Applier {
    private static final long[] LAST_DIM = {-1};

    private final UpdateRecipe.WeightHook hook;
    private final MuonConfig config;
    private final UpdateSlots.Applier decay;
    /** The dtype of the norms: float64 for a float64 parameter, else float32. */
    private final ScalarType normType;
    /** The largest finite value of the parameter's dtype. */
    private final double paramLargest;
    /** The parameter's matrix view's shape, its rows and columns, for the gathered steps of unequal row blocks. */
    private final long[] matrixShape;
    private final long rows;
    private final long cols;
    /** A split parameter's steps {@code lr'·O}, gathered block by block; created at its first step. */
    private Tensor gathered;
    /** The lr the gathered blocks are applied with; NaN when nothing is gathered. */
    private double gatheredLr = Double.NaN;

    /**
     * The hook of one parameter.
     *
     * @param hook   which hook: RadialBrake, RelativeUpdate or an update floor
     * @param config its group's config as built, which holds the hook's settings
     * @param state  the parameter
     * @param decay  the applier it wraps: decoupled or cautious decay, then the step
     */
    WeightHookApplier(UpdateRecipe.WeightHook hook, MuonConfig config, ParameterState state,
                      UpdateSlots.Applier decay) {
        this.hook = hook;
        this.config = config;
        this.decay = decay;
        this.normType = state.param.scalar_type().value == ScalarType.Double.value ? ScalarType.Double
                : ScalarType.Float;
        this.paramLargest = HyperballConfig.largestFinite(ParameterSpec.dtypeName(state.param.scalar_type()));
        this.matrixShape = state.matrix.shape();
        this.rows = state.layout.rows();
        this.cols = state.layout.cols();
    }

    @Override
    public void apply(UpdateSlots.Block block, Tensor o, double lr, UpdateSlots.Step step) {
        if (block.firstRow() == UpdateSlots.Block.WHOLE || block.stacked() > 0) {
            hooked(block, o, lr, step);
            return;
        }
        // One of unequal row blocks: the hook is the whole parameter's, so the step is gathered for it.
        if (gathered == null) {
            gathered = NativeLifetime.outliveScope(torch.empty(matrixShape, o.options(), null));
        }
        Tensor slice = gathered.narrow(block.rowDim(), block.firstRow(), block.rows());
        if (hook == UpdateRecipe.WeightHook.RELATIVE_UPDATE) {
            slice.copy_(o);
            gatheredLr = lr;
        } else {
            torch.mul_out(slice, o, new Scalar(lr));
            gatheredLr = 1.0;
        }
    }

    @Override
    public void finish(ParameterState state, UpdateSlots.Step step) {
        if (Double.isNaN(gatheredLr)) {
            return;
        }
        double lr = gatheredLr;
        gatheredLr = Double.NaN;
        hooked(new UpdateSlots.Block(gathered, state.matrix, rows, cols, UpdateSlots.Block.WHOLE, 0, 0), gathered,
                lr, step);
    }

    /** The hook around the decay and step of a block that is the whole parameter. */
    private void hooked(UpdateSlots.Block block, Tensor o, double lr, UpdateSlots.Step step) {
        Tensor p = block.param();
        switch (hook) {
            case RADIAL_BRAKE -> {
                Tensor before = norm(p, false);
                decay.apply(block, o, lr, step);
                RadialBrakeConfig brake = config.radialBrake();
                Tensor after = norm(p, false);
                // s·(n₁ − n₀) + n₀ with s chosen on the device: no read-back of the norms.
                Tensor s = torch.where(after.gt(before), new Scalar(brake.outwardScale()),
                        new Scalar(brake.inwardScale())).to(normType);
                Tensor target = after.sub(before).mul_(s).add_(before);
                p.mul_(clampFinite(target.div_(after.clamp_min(new Scalar(brake.eps())))).to(p.scalar_type()));
            }
            case RELATIVE_UPDATE -> {
                double eps = config.relativeUpdate().eps();
                Tensor weight = norm(p, false);
                Tensor update = norm(o, false);
                Tensor zero = weight.lt(new Scalar(eps)).logical_or_(update.lt(new Scalar(eps)));
                Tensor scale = torch.where(zero, new Scalar(0.0), weight.div(update.clamp_min(new Scalar(eps))));
                decay.apply(block, o.mul(clampFinite(scale).to(o.scalar_type())), lr, step);
            }
            case UPDATE_FLOOR, UPDATE_FLOOR_PER_ROW -> {
                UpdateFloorConfig floor = config.updateFloor();
                boolean perRow = hook == UpdateRecipe.WeightHook.UPDATE_FLOOR_PER_ROW;
                // lr·floor·‖p₀‖ / max(lr'·‖O‖, eps), at least 1: the step is raised, never lowered. The floor is on
                // the update per unit of the group's lr, as the record's (whose step is lr·u): a step of at least
                // floor·‖p₀‖ whatever the lr would ignore the lr and its schedule.
                Tensor factor = norm(p, perRow).mul_(new Scalar(floor.floor())).mul_(new Scalar(step.config.lr()))
                        .div_(
                        norm(o, perRow).mul_(new Scalar(lr)).clamp_min_(new Scalar(floor.eps())))
                        .clamp_min_(new Scalar(1.0));
                decay.apply(block, o.mul(clampFinite(factor).to(o.scalar_type())), lr, step);
            }
            case NONE, HYPERBALL -> throw new IllegalStateException("not a hook of this applier: " + hook);
        }
    }

    /** A factor clamped to the finite range of the parameter's dtype (an overflow never meets the parameter). */
    private Tensor clampFinite(Tensor factor) {
        return factor.clamp_(new ScalarOptional(new Scalar(-paramLargest)),
                new ScalarOptional(new Scalar(paramLargest)));
    }

    /** {@link #norm(Tensor, ScalarType, boolean)} in {@link #normType}. */
    private Tensor norm(Tensor t, boolean perRow) {
        return norm(t, normType, perRow);
    }

    /**
     * The Frobenius norm of a whole tensor, or of each row (along its last dim, kept), in {@code normType} on its
     * device. A float64 {@code O} (a float64 iteration or the exact SVD on a narrower parameter) is measured in
     * float64 and the norm narrowed, since libtorch's norm does not narrow its input. Hyperball's applier measures
     * its update with it too.
     */
    static Tensor norm(Tensor t, ScalarType normType, boolean perRow) {
        boolean wider = t.scalar_type().value == ScalarType.Double.value && normType.value != ScalarType.Double.value;
        ScalarTypeOptional type = new ScalarTypeOptional(wider ? ScalarType.Double : normType);
        Tensor norm = perRow ? torch.linalg_vector_norm(t, new Scalar(2.0), LAST_DIM, true, type)
                : torch.linalg_vector_norm(t, new Scalar(2.0), new LongArrayRefOptional(), false, type);
        return wider ? norm.to(normType) : norm;
    }
}
