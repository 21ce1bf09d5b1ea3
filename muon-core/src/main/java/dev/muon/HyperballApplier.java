package dev.muon;

import dev.muon.internal.NativeLifetime;
import dev.muon.state.ParameterSpec;
import org.bytedeco.pytorch.LongArrayRefOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarOptional;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * Hyperball's applier ({@link HyperballConfig}): the parameter and its update held at a fixed Frobenius norm, in
 * place of weight decay, over the whole parameter:
 * <pre>
 *   R  = the fixed radius, or ‖p‖_F before this step
 *   p' = p − lr · R · O / max(‖O‖_F, eps)
 *   p  = R · p' / max(‖p'‖_F, eps)
 * </pre>
 * A parameter taken as one block (a matrix, a stack, equal row blocks stacked) is updated at once; the unequal row
 * blocks of a split are gathered into one {@code O} of the parameter's shape first, and applied after the last.
 * The norms are computed on the device in float32 (in float64 for a float64 parameter, and for one whose radius
 * float32 sums of squares could overflow or underflow: {@link HyperballConfig#float64Norms}), never read back, so a
 * GPU step does not stall on them. Each factor is clamped to the finite range before it meets the parameter, so a
 * zero update (a norm floored at eps) can never multiply an infinity; inside that range the clamps change nothing.
 */
final class HyperballApplier implements UpdateSlots.Applier {
    private static final System.Logger LOG = System.getLogger(HyperballApplier.class.getName());

    private final HyperballConfig config;
    /** The dtype of the norms. */
    private final ScalarType normType;
    /** The largest finite value of the norms' dtype, and of the parameter's. */
    private final double normLargest;
    private final double paramLargest;
    /** The parameter's matrix view's shape ({@code [rows, cols]} or a stack's {@code [k, rows, cols]}). */
    private final long[] matrixShape;
    /** A split parameter's {@code O}, gathered block by block before it is applied; created at its first step. */
    private Tensor gathered;
    /** The lr of the gathered blocks, NaN when nothing is gathered (every block's is the lr itself). */
    private double gatheredLr = Double.NaN;

    /**
     * The applier of one parameter.
     *
     * @param config the group's Hyperball settings
     * @param state  the parameter
     * @throws IllegalArgumentException if the parameter's norm is 0: it has no direction to keep
     */
    HyperballApplier(HyperballConfig config, ParameterState state) {
        this.config = config;
        this.matrixShape = state.matrix.shape();
        String dtype = ParameterSpec.dtypeName(state.param.scalar_type());
        this.paramLargest = HyperballConfig.largestFinite(dtype);
        double norm = state.param.numel() == 0 ? 0 : norm(state.param, ScalarType.Double).item_double();
        if (state.param.numel() > 0) {
            if (norm == 0) {
                throw new IllegalArgumentException("hyperball needs every Muon parameter's norm to be > 0 (it is "
                        + "held on its sphere); " + state.label + " has norm 0");
            }
            config.checkParameter(state.label, dtype, norm, state.param.abs().max().item_double());
        }
        boolean float64Norms = config.float64Norms(dtype, norm);
        this.normType = float64Norms ? ScalarType.Double : ScalarType.Float;
        this.normLargest = HyperballConfig.largestFinite(float64Norms ? "float64" : "float32");
    }

    @Override
    public void atBuild(ParameterState state) {
        if (!config.fixedRadius() || state.param.numel() == 0) {
            return;
        }
        try (NoGradGuard noGrad = new NoGradGuard()) {
            Tensor norm = norm(state.param);
            double before = norm.item_double();
            state.param.mul_(norm.reciprocal_().mul_(new Scalar(config.radius())).clamp_max_(
                    new Scalar(paramLargest)).to(state.param.scalar_type()));
            LOG.log(System.Logger.Level.INFO, "Muon: hyperball radius " + config.radius() + ": " + state.label
                    + " rescaled from norm " + before + " to " + config.radius());
        }
    }

    @Override
    public void apply(UpdateSlots.Block block, Tensor o, double lr, UpdateSlots.Step step) {
        if (block.firstRow() == UpdateSlots.Block.WHOLE || block.stacked() > 0) {
            project(block.param(), o, lr);
            return;
        }
        // One of unequal row blocks: the sphere is the whole parameter's, so O is gathered for its norm.
        if (gathered == null) {
            gathered = NativeLifetime.outliveScope(torch.empty(matrixShape, o.options(), null));
        }
        gathered.narrow(block.rowDim(), block.firstRow(), block.rows()).copy_(o);
        gatheredLr = lr;
    }

    @Override
    public void finish(ParameterState state, UpdateSlots.Step step) {
        if (Double.isNaN(gatheredLr)) {
            return;
        }
        project(state.matrix, gathered, gatheredLr);
        gatheredLr = Double.NaN;
    }

    /**
     * {@code p ← R·(p − lr·R·O/‖O‖)/‖p − lr·R·O/‖O‖‖}, every norm floored at eps; each factor clamped to the finite
     * range (the norms' dtype's between products, the parameter's where it meets the parameter).
     */
    private void project(Tensor p, Tensor o, double lr) {
        Tensor radius = config.fixedRadius() ? null : norm(p);
        // −lr·R / max(‖O‖, eps), a 0-dim tensor on the device.
        // ‖O‖ of a float64 O (a float64 iteration, or the exact SVD, on a narrower parameter) in float64, narrowed.
        Tensor step = WeightHookApplier.norm(o, normType, false).clamp_min_(new Scalar(config.eps())).reciprocal_();
        if (radius == null) {
            step.mul_(new Scalar(-lr * config.radius()));
        } else {
            step.mul_(radius).clamp_max_(new Scalar(normLargest)).mul_(new Scalar(-lr));
        }
        p.addcmul_(o, step.clamp_(new ScalarOptional(new Scalar(-paramLargest)),
                new ScalarOptional(new Scalar(paramLargest))).to(p.scalar_type()), new Scalar(1.0));
        Tensor scale = norm(p).clamp_min_(new Scalar(config.eps())).reciprocal_();
        if (radius == null) {
            scale.mul_(new Scalar(config.radius()));
        } else {
            scale.mul_(radius);
        }
        p.mul_(scale.clamp_max_(new Scalar(paramLargest)).to(p.scalar_type()));
    }

    /** The Frobenius norm of a whole tensor, in {@link #normType}, a 0-dim tensor on its device. */
    private Tensor norm(Tensor t) {
        return norm(t, normType);
    }

    private static Tensor norm(Tensor t, ScalarType type) {
        return torch.linalg_vector_norm(t, new Scalar(2.0), new LongArrayRefOptional(), false,
                new ScalarTypeOptional(type));
    }
}
