package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Behaviour of {@link Muon} beyond the golden trajectories. */
@ExtendWith(NativeScopePerTest.class)
class MuonPropertiesTest {
    @BeforeEach
    void seed() {
        torch.manual_seed(7);
    }

    static Tensor param(ScalarType dtype, long... shape) {
        return torch.randn(shape).to(dtype).requires_grad_(true);
    }

    static void setGrad(Tensor p) {
        p.mutable_grad().put(torch.randn(p.shape()).to(p.scalar_type()));
    }

    @ParameterizedTest
    @EnumSource(value = NsPrecision.class)
    void update_keepsShapeDtypeAndDevice(NsPrecision precision) {
        for (ScalarType dtype : new ScalarType[]{ScalarType.Float, ScalarType.Double, ScalarType.BFloat16}) {
            Tensor w = param(dtype, 12, 7);
            Muon muon = Muon.of(List.of(w), MuonConfig.defaults().withNsPrecision(precision));
            setGrad(w);
            muon.step();
            assertArrayEquals(new long[]{12, 7}, w.shape());
            assertEquals(dtype.value, w.scalar_type().value);
            assertTrue(w.device().is_cpu());
            assertEquals(dtype.value, muon.momentumBuffer(w).orElseThrow().scalar_type().value);
        }
    }

    @Test
    void hundredStepsOfZeroGradients_stayFinite() {
        Tensor a = param(ScalarType.Float, 16, 8);
        Tensor b = param(ScalarType.Float, 8, 16);
        Muon muon = Muon.of(List.of(a, b), MuonConfig.defaults().withLr(0.05));
        for (int i = 0; i < 100; i++) {
            a.mutable_grad().put(torch.zeros(16, 8));
            b.mutable_grad().put(torch.zeros(8, 16));
            muon.step();
        }
        for (Tensor t : List.of(a, b, muon.momentumBuffer(a).orElseThrow())) {
            for (double v : Tensors.values(t)) {
                assertTrue(Double.isFinite(v), "non-finite value " + v);
            }
        }
    }

    @Test
    void parameterWithoutGradient_isSkippedEntirely() {
        Tensor withGrad = param(ScalarType.Float, 6, 4);
        Tensor without = param(ScalarType.Float, 6, 4);
        double[] before = Tensors.values(without);
        Muon muon = Muon.of(List.of(withGrad, without), MuonConfig.defaults().withWeightDecay(0.5).withLr(0.1));
        setGrad(withGrad);
        muon.step();
        assertArrayEquals(before, Tensors.values(without), "no decay without a gradient");
        assertTrue(muon.momentumBuffer(without).isEmpty());
        assertTrue(muon.momentumBuffer(withGrad).isPresent());
    }

    @Test
    void weightDecay_usesTheUnadjustedLr() {
        // With nothing to orthogonalize (zero gradient) only the decay moves a tall parameter; ratio sqrt(3)
        // must not enter it.
        Tensor w = param(ScalarType.Double, 12, 4);
        double[] before = Tensors.values(w);
        Muon muon = Muon.of(List.of(w), MuonConfig.defaults().withLr(0.1).withWeightDecay(0.2));
        w.mutable_grad().put(torch.zeros(12, 4).to(ScalarType.Double));
        muon.step();
        double[] after = Tensors.values(w);
        for (int i = 0; i < before.length; i++) {
            assertEquals(before[i] * (1 - 0.1 * 0.2), after[i], 1e-15);
        }
    }

    @Test
    void convFilter_flattened_matchesTheEquivalentMatrix() {
        Tensor conv = param(ScalarType.Double, 8, 3, 3, 3);
        Tensor matrix = conv.detach().reshape(8, 27).clone().requires_grad_(true);
        Tensor grad = torch.randn(8, 3, 3, 3).to(ScalarType.Double);
        MuonConfig config = MuonConfig.defaults().withNsPrecision(NsPrecision.FLOAT64).withLr(0.03)
                .withConvWeights(ConvWeights.FLATTEN);
        Muon convMuon = Muon.of(List.of(conv), config);
        Muon matrixMuon = Muon.of(List.of(matrix), config);
        for (int i = 0; i < 2; i++) {
            conv.mutable_grad().put(grad);
            matrix.mutable_grad().put(grad.reshape(8, 27));
            convMuon.step();
            matrixMuon.step();
        }
        assertArrayEquals(new long[]{8, 3, 3, 3}, conv.shape());
        assertArrayEquals(Tensors.values(matrix), Tensors.values(conv));
        assertArrayEquals(new long[]{8, 3, 3, 3}, convMuon.momentumBuffer(conv).orElseThrow().shape());
    }

    @Test
    void stackedExperts_batched_matchEachExpertAlone() {
        Tensor experts = param(ScalarType.Double, 3, 10, 6);
        Tensor grad = torch.randn(3, 10, 6).to(ScalarType.Double);
        MuonConfig config = MuonConfig.defaults().withNsPrecision(NsPrecision.FLOAT64).withLr(0.03)
                .withStackedWeights(StackedWeights.BATCH);
        Tensor second = experts.detach().select(0, 1).clone().requires_grad_(true);
        Muon batched = Muon.of(List.of(experts), config);
        Muon single = Muon.of(List.of(second), config);
        experts.mutable_grad().put(grad);
        second.mutable_grad().put(grad.select(0, 1).clone());
        batched.step();
        single.step();
        double[] all = Tensors.values(experts);
        double[] expected = Tensors.values(second);
        double[] got = Arrays.copyOfRange(all, 60, 120);
        assertTrue(Tensors.relativeError(got, expected) <= 1e-14);
    }

    @Test
    void groups_haveTheirOwnLr_andSetLrTakesEffect() {
        Tensor a = param(ScalarType.Double, 5, 5);
        Tensor b = param(ScalarType.Double, 5, 5);
        Tensor grad = torch.randn(5, 5).to(ScalarType.Double);
        b.detach().copy_(a.detach());
        MuonConfig base = MuonConfig.defaults().withNsPrecision(NsPrecision.FLOAT64).withWeightDecay(0);
        Muon muon = Muon.builder().addGroup(List.of(a), base.withLr(0.01)).addGroup(List.of(b), base.withLr(0.02))
                .build();
        assertEquals(2, muon.groupCount());
        muon.setLr(1, 0.04);
        assertEquals(0.04, muon.lr(1));
        assertEquals(0.04, muon.config(1).lr());
        double[] start = Tensors.values(a);
        a.mutable_grad().put(grad);
        b.mutable_grad().put(grad);
        muon.step();
        double[] da = Tensors.values(a);
        double[] db = Tensors.values(b);
        for (int i = 0; i < start.length; i++) {
            // Same gradient and state: group 1's step is exactly four times group 0's.
            assertEquals(4 * (da[i] - start[i]), db[i] - start[i], 1e-12);
        }
    }

    @Test
    void zeroGrad_clearsEveryGradient() {
        Tensor a = param(ScalarType.Float, 3, 4);
        Muon muon = Muon.of(List.of(a), MuonConfig.defaults());
        setGrad(a);
        assertTrue(a.grad().defined());
        muon.zeroGrad();
        assertFalse(a.grad().defined());
        double[] before = Tensors.values(a);
        muon.step();
        assertArrayEquals(before, Tensors.values(a), "a step after zeroGrad changes nothing");
    }

    @Test
    void exactSvdMode_appliesThePolarFactor() {
        Tensor w = param(ScalarType.Double, 6, 9);
        Tensor grad = torch.randn(6, 9).to(ScalarType.Double);
        double[] start = Tensors.values(w);
        MuonConfig config = MuonConfig.defaults().withOrthogonalization(Orthogonalization.EXACT_SVD)
                .withWeightDecay(0).withNesterov(false).withLr(1.0);
        Muon muon = Muon.of(List.of(w), config);
        w.mutable_grad().put(grad);
        muon.step();
        // Without Nesterov the update is the polar factor of (1 − μ)·g, i.e. of g: all singular values 1.
        double[] after = Tensors.values(w);
        double[] step = new double[start.length];
        for (int i = 0; i < step.length; i++) {
            step[i] = start[i] - after[i];
        }
        Tensor update = Tensors.of(step, new long[]{6, 9}, ScalarType.Double);
        for (double s : Tensors.values(torch.linalg_svdvals(update))) {
            assertEquals(1.0, s, 1e-12);
        }
    }

    @Test
    void parametersOfTheSameShape_shareOneWorkspace() {
        Tensor a = param(ScalarType.Float, 32, 16);
        Tensor b = param(ScalarType.Float, 32, 16);
        Muon muon = Muon.of(List.of(a, b), MuonConfig.defaults());
        NewtonSchulz nsA = (NewtonSchulz) muon.orthogonalizerOf(a);
        assertTrue(nsA == muon.orthogonalizerOf(b), "one orthogonalizer (and workspace set) per config");
        Tensor c = param(ScalarType.Float, 32, 16);
        Muon other = Muon.of(List.of(c), MuonConfig.defaults().withLr(0.5));
        assertNotEquals(nsA, other.orthogonalizerOf(c));
    }
}
