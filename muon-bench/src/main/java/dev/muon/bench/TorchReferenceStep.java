package dev.muon.bench;

import dev.muon.AdjustLr;
import dev.muon.MomentumPrecision;
import dev.muon.MuonConfig;
import dev.muon.Orthogonalization;
import dev.muon.orthogonalize.Coefficients;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.ArrayList;
import java.util.List;

/**
 * The same-process yardstick of the optimizer step: PyTorch's {@code torch.optim.Muon} over the Muon parameters,
 * op for op as PyTorch 2.10 writes it ({@code torch/optim/_muon.py}), and libtorch's own {@code AdamW} over the rest,
 * all on the libtorch 2.10 that our step runs on, through the same bindings. Timed call by call beside our
 * {@code MuonAdamW} in one process ({@link SameProcessStep}), it measures what our kernels and passes give over
 * PyTorch's formulas on the same library, the same cores and the same neighbours, where the PyTorch peer
 * ({@code muon-bench/peer}) also measures another libtorch and another process.
 *
 * <p>Per Muon parameter {@code p} with gradient {@code g} and buffer {@code buf} (zeros at the first step), PyTorch's
 * {@code _single_tensor_muon}:
 * <pre>
 *   buf.lerp_(g, 1 − momentum)
 *   u = nesterov ? g.lerp(buf, momentum) : buf
 *   o = _zeropower_via_newtonschulz(u)       X = u.to(dtype), transposed if tall; X.div_(X.norm().clamp(min=eps));
 *                                            per step: A = X·Xᵀ; B = addmm(A, A, A, beta=b, alpha=c);
 *                                            X = addmm(X, B, X, beta=a)
 *   p.mul_(1 − lr·weightDecay)
 *   p.add_(o, alpha=−lr·ratio)              ratio: _adjust_lr's, sqrt(max(1, rows/cols)) for "original"
 * </pre>
 * PyTorch's Muon orthogonalizes in bfloat16 always; the iteration's dtype here is the config's
 * {@link MuonConfig#nsPrecision()}, so that the float32 entry of the yardstick compares like with like (bfloat16 is
 * PyTorch's default and the bfloat16 entry's).
 *
 * <p>The hyperparameters are read from a {@link MuonConfig}, the one our step runs with; a setting that
 * {@code torch.optim.Muon} has no counterpart for is refused rather than ignored. Not thread-safe.
 */
public final class TorchReferenceStep {
    private final List<Tensor> params;
    private final List<Tensor> buffers = new ArrayList<>();
    private final AdamW adamW;
    private final double lr;
    private final double weightDecay;
    private final double momentum;
    private final boolean nesterov;
    private final int nsSteps;
    private final ScalarType nsType;
    private final AdjustLr adjustLr;
    private final Scalar oneMinusMomentum;
    private final Scalar momentumScalar;
    private final Scalar decay;
    private final Scalar a;
    private final Scalar b;
    private final Scalar c;
    private final Scalar eps;
    private final Scalar one = new Scalar(1.0);

    /**
     * Builds the reference over {@code muonParams} (Muon) and {@code adamWParams} (libtorch's AdamW, one group).
     *
     * @param muonParams  2-D parameters, each with its gradient set before {@link #step()}
     * @param config      our Muon settings: lr, weight decay, momentum, Nesterov, the coefficient triple, steps, eps,
     *                    the lr adjustment and the iteration's dtype
     * @param adamWParams the other parameters (may be empty)
     * @param adamW       libtorch's AdamW options for them
     * @throws IllegalArgumentException naming a setting that {@code torch.optim.Muon} has no counterpart for, or a
     *                                  parameter that is not 2-D
     */
    public TorchReferenceStep(List<Tensor> muonParams, MuonConfig config, List<Tensor> adamWParams,
                              AdamWOptions adamW) {
        requirePyTorchSettings(config);
        for (int i = 0; i < muonParams.size(); i++) {
            if (muonParams.get(i).dim() != 2) {
                throw new IllegalArgumentException("torch.optim.Muon only supports 2-D parameters; parameter " + i
                        + " has " + muonParams.get(i).dim() + " dimensions");
            }
        }
        this.params = List.copyOf(muonParams);
        this.lr = config.lr();
        this.weightDecay = config.weightDecay();
        this.momentum = config.momentum();
        this.nesterov = config.nesterov();
        this.nsSteps = config.nsSteps();
        this.nsType = config.nsPrecision().scalarType();
        this.adjustLr = config.adjustLr();
        Coefficients abc = config.nsCoefficients().at(0);
        this.a = new Scalar(abc.a());
        this.b = new Scalar(abc.b());
        this.c = new Scalar(abc.c());
        this.eps = new Scalar(config.eps());
        this.oneMinusMomentum = new Scalar(1 - momentum);
        this.momentumScalar = new Scalar(momentum);
        this.decay = new Scalar(1 - lr * weightDecay);
        for (Tensor p : params) {
            buffers.add(torch.zeros_like(p));
        }
        this.adamW = adamWParams.isEmpty() ? null
                : new AdamW(new TensorVector(adamWParams.toArray(new Tensor[0])), adamW);
    }

    private static void requirePyTorchSettings(MuonConfig config) {
        // torch.optim.Muon(params, lr, weight_decay, momentum, nesterov, ns_coefficients, eps, ns_steps,
        // adjust_lr_fn): nothing else. (Its ns_steps < 100 is MuonConfig's own rule.)
        if (config.nsCoefficients().fixedLength().isPresent()) {
            throw new IllegalArgumentException("nsCoefficients must be one triple for every step (torch.optim.Muon's "
                    + "ns_coefficients), got the per-step schedule " + config.nsCoefficients().name());
        }
        if (config.adjustLr() == AdjustLr.SPECTRAL) {
            throw new IllegalArgumentException("adjustLr must be ORIGINAL, MATCH_RMS_ADAMW or NONE (torch.optim.Muon's "
                    + "adjust_lr_fn), got SPECTRAL");
        }
        if (config.extraScale() != 1.0) {
            throw new IllegalArgumentException("extraScale must be 1 (torch.optim.Muon has none), got "
                    + config.extraScale());
        }
        if (config.orthogonalization() != Orthogonalization.NEWTON_SCHULZ) {
            throw new IllegalArgumentException("orthogonalization must be NEWTON_SCHULZ (torch.optim.Muon's), got "
                    + config.orthogonalization());
        }
        if (config.norMuon() != null) {
            throw new IllegalArgumentException("norMuon must be off (torch.optim.Muon has none), got "
                    + config.norMuon());
        }
        if (config.cautiousWeightDecay()) {
            throw new IllegalArgumentException("cautiousWeightDecay must be false (torch.optim.Muon has none), got "
                    + "true");
        }
        if (config.momentumPrecision() != MomentumPrecision.PARAMETER) {
            throw new IllegalArgumentException("momentumPrecision must be PARAMETER (torch.optim.Muon keeps the "
                    + "buffer in the parameter's dtype), got " + config.momentumPrecision());
        }
        if (config.hyperball() != null) {
            throw new IllegalArgumentException("hyperball must be off (torch.optim.Muon has none), got "
                    + config.hyperball());
        }
    }

    /** One step: Muon over its parameters, then AdamW over the rest, as the PyTorch peer's step runs them. */
    public void step() {
        // PyTorch's step runs under torch.no_grad(): in-place updates of leaf parameters.
        try (PointerScope scope = new PointerScope(); NoGradGuard noGrad = new NoGradGuard()) {
            for (int i = 0; i < params.size(); i++) {
                Tensor p = params.get(i);
                Tensor grad = p.grad();
                if (!grad.defined()) {
                    continue; // as PyTorch skips a parameter without a gradient
                }
                Tensor buf = buffers.get(i);
                buf.lerp_(grad, oneMinusMomentum);
                Tensor update = nesterov ? grad.lerp(buf, momentumScalar) : buf;
                Tensor o = zeropowerViaNewtonSchulz(update);
                double adjusted = adjustedLr(lr, adjustLr, p.size(0), p.size(1));
                p.mul_(decay);
                p.add_(o, new Scalar(-adjusted));
            }
        }
        if (adamW != null) {
            adamW.step();
        }
    }

    /**
     * PyTorch's {@code _zeropower_via_newtonschulz}, in this reference's dtype: a new tensor of that dtype, of
     * {@code update}'s shape.
     */
    Tensor zeropowerViaNewtonSchulz(Tensor update) {
        boolean tall = update.size(0) > update.size(1);
        // grad.bfloat16() copies a float32 update; an update already of the iteration's dtype is copied too, or the
        // division below would write into it (the momentum buffer itself without Nesterov).
        Tensor x = update.scalar_type().value == nsType.value ? update.clone() : update.to(nsType);
        if (tall) {
            x = x.t();
        }
        // Ensure spectral norm is at most 1 (PyTorch's comment): the Frobenius norm in the iteration's dtype.
        x.div_(x.norm().clamp_min(eps));
        for (int k = 0; k < nsSteps; k++) {
            Tensor gram = x.mm(x.t());
            Tensor gramUpdate = torch.addmm(gram, gram, gram, b, c);
            x = torch.addmm(x, gramUpdate, x, a, one);
        }
        return tall ? x.t() : x;
    }

    /** PyTorch's {@code _adjust_lr}: {@code lr} times the ratio of {@code adjust_lr_fn} for a rows × cols matrix. */
    static double adjustedLr(double lr, AdjustLr adjustLr, long rows, long cols) {
        double ratio = switch (adjustLr) {
            case ORIGINAL -> Math.sqrt(Math.max(1.0, (double) rows / cols));
            case MATCH_RMS_ADAMW -> 0.2 * Math.sqrt((double) Math.max(rows, cols));
            case NONE -> 1.0;
            case SPECTRAL -> throw new IllegalArgumentException("adjustLr SPECTRAL has no torch.optim.Muon form");
        };
        return lr * ratio;
    }

    /**
     * The momentum buffer of the {@code i}-th Muon parameter (for tests).
     *
     * @param i the parameter's index
     * @return the buffer, live
     */
    Tensor momentumBuffer(int i) {
        return buffers.get(i);
    }
}
