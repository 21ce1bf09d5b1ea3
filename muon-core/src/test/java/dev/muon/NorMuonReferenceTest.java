package dev.muon;

import dev.muon.golden.Float64Update;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NorMuon against a float64 reference written from the paper's equations (Li et al., arXiv 2510.05491,
 * Algorithm 1) on plain Java arrays, step by step: the parameters and the per-row second moments, on the single,
 * same-shape batched and stacked paths. The Newton–Schulz part of the reference is PyTorch's
 * {@code _zeropower_via_newtonschulz}, so the optimizer runs it in float64 too; tolerance 1e-12 relative, the
 * golden suite's for float64.
 */
@ExtendWith(NativeScopePerTest.class)
class NorMuonReferenceTest {
    private static final double TOLERANCE = 1e-12;
    private static final int STEPS = 6;

    /** One reference setting: the parameter shapes, the config, whether the shapes form a same-shape batch. */
    record Setting(String name, List<long[]> shapes, MuonConfig config, boolean batched) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Arguments> settings() {
        MuonConfig base = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1).withMomentum(0.9)
                .withNsPrecision(NsPrecision.FLOAT64).withBatchSameShape(false);
        return Stream.of(
                new Setting("wide and tall, Nesterov, defaults", List.of(new long[]{3, 5}, new long[]{6, 4}),
                        base.withNorMuon(NorMuonConfig.defaults()), false),
                // A large eps and beta2 = 0 make the placement of eps and the EMA visible at 1e-12; adjustLr
                // and extraScale check that the paper's rescaling replaces the ratio and keeps the extra factor.
                new Setting("large eps, beta2 0, no Nesterov, MATCH_RMS_ADAMW, extraScale 1.5",
                        List.of(new long[]{4, 7}, new long[]{9, 2}),
                        base.withNesterov(false).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW).withExtraScale(1.5)
                                .withNorMuon(0.0, 0.05), false),
                new Setting("same-shape batch", List.of(new long[]{4, 4}, new long[]{4, 4}, new long[]{4, 4}),
                        base.withBatchSameShape(true).withNorMuon(0.8, 1e-3), true),
                new Setting("3-D stack", List.of(new long[]{2, 3, 5}),
                        base.withStackedWeights(StackedWeights.BATCH).withNorMuon(0.9, 1e-3), false))
                .map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("settings")
    void trajectory_matchesFloat64Reference(Setting setting) {
        MuonConfig config = setting.config();
        List<Tensor> params = new ArrayList<>();
        List<ReferenceParameter> reference = new ArrayList<>();
        Random random = new Random(17);
        for (long[] shape : setting.shapes()) {
            double[] values = Float64Update.gaussian(random, shape);
            params.add(Tensors.of(values, shape, ScalarType.Double).requires_grad_(true));
            reference.add(new ReferenceParameter(values, shape));
        }
        Muon muon = Muon.of(params, config);
        for (int step = 1; step <= STEPS; step++) {
            for (int i = 0; i < params.size(); i++) {
                double[] g = Float64Update.gaussian(random, setting.shapes().get(i));
                params.get(i).mutable_grad().put(Tensors.of(g, setting.shapes().get(i), ScalarType.Double));
                reference.get(i).step(g, config);
            }
            muon.step();
            assertEquals(setting.batched() ? params.size() : 0, muon.batchedLastStep(), "batched path");
            for (int i = 0; i < params.size(); i++) {
                ReferenceParameter ref = reference.get(i);
                Tensor v = muon.secondMoment(params.get(i)).orElseThrow();
                assertEquals(ScalarType.Double.value, v.scalar_type().value);
                assertTrue(java.util.Arrays.equals(UpdateRecipe.SECOND_MOMENT.shape().of(ref.shape), v.shape()));
                double vError = Tensors.relativeError(v, ref.v);
                double pError = Tensors.relativeError(params.get(i), ref.p);
                assertTrue(vError <= TOLERANCE, "step " + step + " parameter " + i + " v: rel error " + vError);
                assertTrue(pError <= TOLERANCE, "step " + step + " parameter " + i + " p: rel error " + pError);
            }
        }
    }

    /** The reference is not plain Muon: without NorMuon the same run ends far from it, so the test can fail. */
    @Test
    void reference_differsFromPlainMuon() {
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.FLOAT64);
        long[] shape = {3, 5};
        Random random = new Random(3);
        double[] values = Float64Update.gaussian(random, shape);
        Tensor p = Tensors.of(values, shape, ScalarType.Double).requires_grad_(true);
        ReferenceParameter ref = new ReferenceParameter(values, shape);
        Muon plain = Muon.of(List.of(p), config);
        for (int step = 0; step < STEPS; step++) {
            double[] g = Float64Update.gaussian(random, shape);
            p.mutable_grad().put(Tensors.of(g, shape, ScalarType.Double));
            ref.step(g, config.withNorMuon(NorMuonConfig.defaults()));
            plain.step();
        }
        double displacement = 0;
        double missing = 0;
        for (int k = 0; k < values.length; k++) {
            displacement += Math.abs(ref.p[k] - values[k]);
            missing += Math.abs(ref.p[k] - Tensors.values(p)[k]);
        }
        assertTrue(missing > 0.05 * displacement, "plain Muon is " + missing + " from NorMuon's reference, which"
                + " moved " + displacement);
    }

    @Test
    void zeroGradient_leavesTheParameterUnchanged_notNaN() {
        Tensor p = Tensors.of(new double[]{1, 2, 3, 4, 5, 6}, new long[]{2, 3}, ScalarType.Double)
                .requires_grad_(true);
        Muon muon = Muon.of(List.of(p), MuonConfig.defaults().withWeightDecay(0).withNorMuon(NorMuonConfig.defaults()));
        p.mutable_grad().put(Tensors.of(new double[6], new long[]{2, 3}, ScalarType.Double));
        muon.step();
        assertEquals(0.0, Tensors.maxAbsError(p, new double[]{1, 2, 3, 4, 5, 6}));
        assertEquals(0.0, Tensors.maxAbsError(muon.secondMoment(p).orElseThrow(), new double[2]));
    }

    /**
     * One parameter of the reference: a stack of {@code k} matrices of {@code m × n} (k = 1 for a 2-D weight),
     * with its momentum and per-row second moment, all row-major float64.
     */
    static final class ReferenceParameter {
        final long[] shape;
        final int k;
        final int m;
        final int n;
        final double[] p;
        final double[] momentum;
        final double[] v;

        ReferenceParameter(double[] values, long[] shape) {
            this.shape = shape.clone();
            this.k = shape.length == 3 ? (int) shape[0] : 1;
            this.m = (int) shape[shape.length - 2];
            this.n = (int) shape[shape.length - 1];
            this.p = values.clone();
            this.momentum = new double[values.length];
            this.v = new double[k * m];
        }

        void step(double[] g, MuonConfig c) {
            double mu = c.momentum();
            NorMuonConfig nor = c.norMuon();
            for (int e = 0; e < g.length; e++) {
                momentum[e] = mu * momentum[e] + (1 - mu) * g[e];
            }
            for (int b = 0; b < k; b++) {
                double[][] u = new double[m][n];
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        int e = (b * m + i) * n + j;
                        u[i][j] = c.nesterov() ? (1 - mu) * g[e] + mu * momentum[e] : momentum[e];
                    }
                }
                double[][] o = Float64Update.newtonSchulz(u, c);
                // Algorithm 1: v_t = β2·v_{t−1} + (1 − β2)·mean_cols(O_t ⊙ O_t); Ô_t = O_t / (sqrt(v_t) + ε).
                double frobenius = 0;
                for (int i = 0; i < m; i++) {
                    double meanSquare = 0;
                    for (int j = 0; j < n; j++) {
                        meanSquare += o[i][j] * o[i][j];
                    }
                    meanSquare /= n;
                    int r = b * m + i;
                    v[r] = nor.beta2() * v[r] + (1 - nor.beta2()) * meanSquare;
                    for (int j = 0; j < n; j++) {
                        o[i][j] /= Math.sqrt(v[r]) + nor.eps();
                        frobenius += o[i][j] * o[i][j];
                    }
                }
                frobenius = Math.sqrt(frobenius);
                // η̂ = 0.2·η·sqrt(m·n)/‖Ô‖_F; θ = θ − η·λ·θ − η̂·Ô; extraScale multiplies η̂ as it multiplies Muon's lr.
                double lrHat = 0.2 * c.lr() * Math.sqrt((double) m * n) / frobenius * c.extraScale();
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        int e = (b * m + i) * n + j;
                        p[e] = p[e] * (1 - c.lr() * c.weightDecay()) - lrHat * o[i][j];
                    }
                }
            }
        }
    }
}
