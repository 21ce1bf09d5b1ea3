package dev.muon;

import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.ScalarTypeOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The measurements of one {@link MuonAdamW} step: made before the step (gradient norms, a copy of the
 * parameters), finished after it. Exists only while metrics are on, so that a step without metrics pays nothing.
 * Runs inside the step's {@code PointerScope} and {@code NoGradGuard}.
 */
final class StepMeter {
    private final MuonAdamW optimizer;
    private final MuonConfig muonConfig;
    private final AdamWConfig adamWConfig;
    private final double[] gradSquares = new double[2];
    private final Map<String, Tensor> before = new HashMap<>();

    StepMeter(MuonAdamW optimizer) {
        this.optimizer = optimizer;
        this.muonConfig = optimizer.muonConfig();
        this.adamWConfig = optimizer.adamWConfig();
        capture(0, optimizer.muonNames(), optimizer.muonParams(), optimizer.metricsOn());
        capture(1, optimizer.adamWNames(), optimizer.adamWParams(), optimizer.metricsOn());
    }

    private void capture(int group, List<String> names, List<Tensor> params, boolean all) {
        for (int i = 0; i < params.size(); i++) {
            Tensor p = params.get(i);
            Tensor grad = p.grad();
            if (!grad.defined()) {
                continue;
            }
            String name = names.get(i);
            if (all || optimizer.orthogonalityNames().contains(name)) {
                gradSquares[group] += squaredNorm(grad);
                before.put(name, p.to(ScalarType.Double).clone());
            }
        }
    }

    StepReport finish(long step) {
        List<GroupMetrics> groups = new ArrayList<>();
        if (optimizer.metricsOn()) {
            groups.add(muonMetrics());
            groups.add(adamWMetrics());
        }
        Map<String, Double> orthogonality = new LinkedHashMap<>();
        List<String> names = optimizer.muonNames();
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            if (optimizer.orthogonalityNames().contains(name) && before.containsKey(name)) {
                orthogonality.put(name, orthogonalityError(name, optimizer.muonParams().get(i)));
            }
        }
        return new StepReport(step, false, Optional.empty(), groups, orthogonality);
    }

    private GroupMetrics muonMetrics() {
        double momentum = 0;
        double update = 0;
        long count = 0;
        Map<String, Double> lrs = new LinkedHashMap<>();
        for (int i = 0; i < optimizer.muonParams().size(); i++) {
            String name = optimizer.muonNames().get(i);
            Tensor p = optimizer.muonParams().get(i);
            Tensor old = before.get(name);
            if (old == null) {
                continue;
            }
            momentum += optimizer.muon().momentumBuffer(p).map(StepMeter::squaredNorm).orElse(0.0);
            update += squaredNorm(p.to(ScalarType.Double).sub(old));
            count += p.numel();
            lrs.put(name, muonConfig.lr() * ratio(p));
        }
        return new GroupMetrics(OptimizerKind.MUON, Math.sqrt(gradSquares[0]), Math.sqrt(momentum),
                count == 0 ? 0 : Math.sqrt(update / count), lrs);
    }

    private GroupMetrics adamWMetrics() {
        Map<Long, AdamWMoments> moments = optimizer.adamW() == null ? Map.of()
                : AdamWMoments.readAll(optimizer.adamW());
        double momentum = 0;
        double update = 0;
        long count = 0;
        Map<String, Double> lrs = new LinkedHashMap<>();
        for (int i = 0; i < optimizer.adamWParams().size(); i++) {
            String name = optimizer.adamWNames().get(i);
            Tensor p = optimizer.adamWParams().get(i);
            Tensor old = before.get(name);
            if (old == null) {
                continue;
            }
            AdamWMoments m = moments.get(ParameterState.identityOf(p));
            if (m != null) {
                momentum += squaredNorm(m.expAvg());
            }
            update += squaredNorm(p.to(ScalarType.Double).sub(old));
            count += p.numel();
            lrs.put(name, adamWConfig.lr());
        }
        return new GroupMetrics(OptimizerKind.ADAMW, Math.sqrt(gradSquares[1]), Math.sqrt(momentum),
                count == 0 ? 0 : Math.sqrt(update / count), lrs);
    }

    private double ratio(Tensor p) {
        MatrixLayout layout = MatrixLayout.of(p, muonConfig, "parameter");
        return muonConfig.adjustLr().ratio(layout.rows(), layout.cols()) * muonConfig.extraScale();
    }

    /**
     * {@code ‖OᵀO − I‖_F} with the smaller Gram matrix, where {@code O} is recovered from the parameter change,
     * {@code O = (p_old·(1 − lr·wd) − p_new) / (lr·ratio)} in float64: exact up to the parameter's rounding, and it
     * keeps Muon's step free of any hook. NaN when the lr is 0 (no update to recover).
     */
    private double orthogonalityError(String name, Tensor p) {
        double scaledLr = muonConfig.lr() * ratio(p);
        if (scaledLr == 0) {
            return Double.NaN;
        }
        MatrixLayout layout = MatrixLayout.of(p, muonConfig, name);
        Tensor o = before.get(name).mul(new Scalar(1 - muonConfig.lr() * muonConfig.weightDecay()))
                .sub(p.to(ScalarType.Double)).div(new Scalar(scaledLr))
                .reshape(layout.rows(), layout.cols());
        Tensor gram = layout.rows() <= layout.cols() ? o.matmul(o.t()) : o.t().matmul(o);
        Tensor eye = torch.eye(gram.size(0), new TensorOptions().dtype(
                new ScalarTypeOptional(ScalarType.Double)));
        return Math.sqrt(squaredNorm(gram.sub(eye)));
    }

    static double squaredNorm(Tensor t) {
        Tensor d = t.to(ScalarType.Double);
        return d.mul(d).sum().item_double();
    }
}
