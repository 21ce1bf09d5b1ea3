package dev.muon;

import dev.muon.state.AdamWMoments;
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
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The measurements of one {@link MuonAdamW} step: made before the step (gradient norms, a copy of the
 * parameters), finished after it. Exists only while metrics are on, so that a step without metrics pays nothing.
 * Runs inside the step's {@code PointerScope} and {@code NoGradGuard}. It sees the optimizer through narrow views
 * only: each group's names and parameters, the configs, and, after the step, lookups of the state it reports.
 */
final class StepMeter {
    /**
     * The names and parameters of one group, in table order.
     *
     * @param names  the names
     * @param params the parameters
     */
    record Group(List<String> names, List<Tensor> params) {
    }

    /**
     * Where the optimizer's state is read after a step.
     *
     * @param momentum     a Muon parameter's momentum buffer, if it has one
     * @param muonLr       the scaled lr a Muon parameter's update applied (Muon's own record)
     * @param adamWMoments every AdamW parameter's moments, by tensor identity (called once per step, and only
     *                     when all metrics are on)
     */
    record StateLookup(Function<Tensor, Optional<Tensor>> momentum, ToDoubleFunction<Tensor> muonLr,
                       Supplier<Map<Long, AdamWMoments>> adamWMoments) {
    }

    private final boolean all;
    private final Set<String> orthogonalityNames;
    private final Group muon;
    private final Group adamW;
    private final MuonConfig muonConfig;
    private final AdamWConfig adamWConfig;
    private final double[] gradSquares = new double[2];
    private final Map<String, Tensor> before = new HashMap<>();

    /**
     * Starts measuring a step that is about to run.
     *
     * @param all                whether every metric is on, or only the orthogonality errors
     * @param orthogonalityNames the Muon parameters whose orthogonality error is measured
     */
    StepMeter(boolean all, Set<String> orthogonalityNames, Group muon, Group adamW, MuonConfig muonConfig,
              AdamWConfig adamWConfig) {
        this.all = all;
        this.orthogonalityNames = orthogonalityNames;
        this.muon = muon;
        this.adamW = adamW;
        this.muonConfig = muonConfig;
        this.adamWConfig = adamWConfig;
        capture(0, muon);
        capture(1, adamW);
    }

    private void capture(int index, Group group) {
        for (int i = 0; i < group.params().size(); i++) {
            Tensor p = group.params().get(i);
            Tensor grad = p.grad();
            if (!grad.defined()) {
                continue;
            }
            String name = group.names().get(i);
            if (all || orthogonalityNames.contains(name)) {
                gradSquares[index] += squaredNorm(grad);
                before.put(name, p.to(ScalarType.Double).clone());
            }
        }
    }

    StepReport finish(long step, StateLookup state) {
        List<GroupMetrics> groups = new ArrayList<>();
        if (all) {
            groups.add(muonMetrics(state));
            groups.add(adamWMetrics(state));
        }
        Map<String, Double> orthogonality = new LinkedHashMap<>();
        for (int i = 0; i < muon.names().size(); i++) {
            String name = muon.names().get(i);
            if (orthogonalityNames.contains(name) && before.containsKey(name)) {
                orthogonality.put(name, orthogonalityError(name, muon.params().get(i), state));
            }
        }
        return new StepReport(step, false, Optional.empty(), groups, orthogonality);
    }

    private GroupMetrics muonMetrics(StateLookup state) {
        return metrics(OptimizerKind.MUON, 0, muon,
                p -> state.momentum().apply(p).map(StepMeter::squaredNorm).orElse(0.0), state.muonLr());
    }

    private GroupMetrics adamWMetrics(StateLookup state) {
        Map<Long, AdamWMoments> moments = state.adamWMoments().get();
        return metrics(OptimizerKind.ADAMW, 1, adamW, p -> {
            AdamWMoments m = moments.get(ParameterState.identityOf(p));
            return m == null ? 0.0 : squaredNorm(m.expAvg());
        }, p -> adamWConfig.lr());
    }

    /**
     * A group's metrics over its parameters measured before the step: the gradient norm, the norm of the momentum
     * (the squares {@code momentumSquares} gives, 0 for none), the update's RMS and each parameter's lr.
     *
     * @param index the group's place in {@link #gradSquares}
     */
    private GroupMetrics metrics(OptimizerKind kind, int index, Group group, ToDoubleFunction<Tensor> momentumSquares,
                                 ToDoubleFunction<Tensor> lr) {
        double momentum = 0;
        double update = 0;
        long count = 0;
        Map<String, Double> lrs = new LinkedHashMap<>();
        for (int i = 0; i < group.params().size(); i++) {
            String name = group.names().get(i);
            Tensor p = group.params().get(i);
            Tensor old = before.get(name);
            if (old == null) {
                continue;
            }
            momentum += momentumSquares.applyAsDouble(p);
            update += squaredNorm(p.to(ScalarType.Double).sub(old));
            count += p.numel();
            lrs.put(name, lr.applyAsDouble(p));
        }
        return new GroupMetrics(kind, Math.sqrt(gradSquares[index]), Math.sqrt(momentum),
                count == 0 ? 0 : Math.sqrt(update / count), lrs);
    }

    /**
     * {@code ‖OᵀO − I‖_F} with the smaller Gram matrix, where {@code O} is recovered from the parameter change,
     * {@code O = (p_old·(1 − lr·wd) − p_new) / (lr·ratio)} in float64: exact up to the parameter's rounding, and it
     * keeps Muon's step free of any hook. NaN when the lr is 0 (no update to recover).
     */
    private double orthogonalityError(String name, Tensor p, StateLookup state) {
        double scaledLr = state.muonLr().applyAsDouble(p);
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
