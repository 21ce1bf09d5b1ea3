package dev.muon;

import dev.muon.golden.Float64Update;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * bfloat16 momentum storage on half-precision parameters, which used to throw at the first step ({@code expected
 * dtype float}) and leave the optimizer part-way: on a bfloat16 parameter it is the parameter's own dtype, so it
 * gives exactly what {@link MomentumPrecision#PARAMETER} gives (api.md says so); on a float16 parameter the
 * gradient is widened to float32, the buffer advanced there and stored in bfloat16.
 */
@ExtendWith(NativeScopePerTest.class)
class MomentumPrecisionDtypesTest {
    private static final int STEPS = 3;
    private static final MuonConfig CONFIG = MuonConfig.defaults().withLr(0.05).withWeightDecay(0.1);

    @Test
    void bfloat16Parameter_bfloat16Momentum_isBitForBitTheParameterPrecision() {
        Tensor stored = run(CONFIG.withMomentumPrecision(MomentumPrecision.BFLOAT16), ScalarType.BFloat16);
        Tensor own = run(CONFIG.withMomentumPrecision(MomentumPrecision.PARAMETER), ScalarType.BFloat16);
        assertTrue(torch.equal(own, stored), "bfloat16 momentum on a bfloat16 parameter differs from its own dtype");
    }

    /** Three steps on a [6, 10] parameter of this dtype; returns the parameter. */
    private static Tensor run(MuonConfig config, ScalarType dtype) {
        torch.manual_seed(3);
        Tensor p = torch.randn(6, 10).to(dtype).requires_grad_(true);
        Muon muon = Muon.of(List.of(p), config);
        for (int step = 0; step < STEPS; step++) {
            p.mutable_grad().put(torch.randn(6, 10).to(dtype));
            muon.step();
            assertEquals(dtype.value, muon.momentumBuffer(p).orElseThrow().scalar_type().value);
        }
        return p.detach().clone();
    }

    @Test
    void float16Parameter_bfloat16Momentum_matchesTheFloat64Reference() {
        MuonConfig config = CONFIG.withMomentumPrecision(MomentumPrecision.BFLOAT16);
        long[] shape = {6, 10};
        Random random = new Random(7);
        // Values and gradients that float16 holds exactly, so that the reference starts from the same numbers.
        Tensor p = Tensors.of(Float64Update.gaussian(random, shape), shape, ScalarType.Half).requires_grad_(true);
        Float64Update reference = new Float64Update(Tensors.values(p.to(ScalarType.Double)), 1, 6, null, config);
        Muon muon = Muon.of(List.of(p), config);
        for (int step = 0; step < STEPS; step++) {
            Tensor g = Tensors.of(Float64Update.gaussian(random, shape), shape, ScalarType.Half);
            reference.step(Tensors.values(g.to(ScalarType.Double)));
            p.mutable_grad().put(g);
            muon.step();
            Tensor momentum = muon.momentumBuffer(p).orElseThrow();
            assertEquals(ScalarType.BFloat16.value, momentum.scalar_type().value);
            double mError = Tensors.relativeError(momentum.to(ScalarType.Double), reference.momentum);
            // The buffer is the bfloat16 rounding of float32 arithmetic on exact inputs: one bfloat16 step.
            assertTrue(mError <= 1.0 / 256, "step " + step + " momentum rel error " + mError);
        }
        // float32 Newton–Schulz and a float16 parameter rounded at every step: the golden float32 bound on the
        // update, widened by float16's rounding of the parameter (2^-11 relative) over three steps.
        double pError = Tensors.relativeError(p.to(ScalarType.Double), reference.p);
        assertTrue(pError <= 3e-3, "parameter rel error " + pError);
    }
}
