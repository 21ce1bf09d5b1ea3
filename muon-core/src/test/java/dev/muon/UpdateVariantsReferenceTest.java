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
 * The compositions the update stages made possible, against a float64 reference written here from the formulas on
 * plain Java arrays (independent of the stages): NorMuon with a row split (per block: the block's rows of the
 * second moment, the block normalized and rescaled on its own, as Dion does for split parameters), cautious weight
 * decay (Chen et al., arXiv 2510.12402: decay only where {@code O ⊙ p >= 0}), and momentum stored in bfloat16 (the
 * float64 value advanced from the stored one, rounded to bfloat16 through float32 as libtorch's cast does). The
 * Newton–Schulz part is PyTorch's {@code _zeropower_via_newtonschulz} ({@link NorMuonReferenceTest}); the optimizer
 * runs in float64 too; tolerance 1e-12 relative, the golden suite's for float64.
 */
@ExtendWith(NativeScopePerTest.class)
class UpdateVariantsReferenceTest {
    private static final double TOLERANCE = 1e-12;
    private static final int STEPS = 6;

    /** One setting: a parameter's shape, its row blocks (null: whole), the config. */
    record Setting(String name, long[] shape, int[] blocks, MuonConfig config) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Arguments> settings() {
        MuonConfig base = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1).withMomentum(0.9)
                .withNsPrecision(NsPrecision.FLOAT64);
        MuonConfig norMuon = base.withNorMuon(0.9, 1e-3);
        return Stream.of(
                new Setting("NorMuon, fused QKV per head (equal blocks)", new long[]{12, 4}, new int[]{4, 4, 4},
                        norMuon),
                new Setting("NorMuon, unequal blocks (grouped query)", new long[]{10, 6}, new int[]{6, 2, 2},
                        norMuon.withNesterov(false)),
                new Setting("row split alone, tall blocks", new long[]{9, 3}, new int[]{3, 6}, base),
                new Setting("cautious weight decay", new long[]{5, 7}, null, base.withCautiousWeightDecay(true)),
                new Setting("cautious decay, NorMuon and a row split", new long[]{8, 5}, new int[]{4, 4},
                        norMuon.withCautiousWeightDecay(true)),
                new Setting("bfloat16 momentum, Nesterov", new long[]{6, 4}, null,
                        base.withMomentumPrecision(MomentumPrecision.BFLOAT16)),
                new Setting("bfloat16 momentum, no Nesterov, cautious decay", new long[]{4, 9}, null,
                        base.withMomentumPrecision(MomentumPrecision.BFLOAT16).withNesterov(false)
                                .withCautiousWeightDecay(true)),
                new Setting("everything: bfloat16 momentum, NorMuon, split, cautious", new long[]{6, 4},
                        new int[]{2, 2, 2}, norMuon.withMomentumPrecision(MomentumPrecision.BFLOAT16)
                        .withCautiousWeightDecay(true)))
                .map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("settings")
    void trajectory_matchesFloat64Reference(Setting setting) {
        Random random = new Random(29);
        double[] values = Float64Update.gaussian(random, setting.shape());
        Tensor p = Tensors.of(values, setting.shape(), ScalarType.Double).requires_grad_(true);
        Muon.Builder builder = Muon.builder().addGroup(List.of(p), setting.config());
        if (setting.blocks() != null) {
            builder.rowSplit(p, RowSplit.splitRows(setting.blocks()));
        }
        Muon muon = builder.build();
        Float64Update ref = new Float64Update(values, 1, (int) setting.shape()[0], setting.blocks(),
                setting.config());
        for (int step = 1; step <= STEPS; step++) {
            double[] g = Float64Update.gaussian(random, setting.shape());
            p.mutable_grad().put(Tensors.of(g, setting.shape(), ScalarType.Double));
            ref.step(g);
            muon.step();
            double pError = Tensors.relativeError(p, ref.p);
            assertTrue(pError <= TOLERANCE, "step " + step + " p: rel error " + pError);
            Tensor momentum = muon.momentumBuffer(p).orElseThrow();
            boolean bf16 = setting.config().momentumPrecision() == MomentumPrecision.BFLOAT16;
            assertEquals(bf16 ? ScalarType.BFloat16.value : ScalarType.Double.value,
                    momentum.scalar_type().value);
            double mError = Tensors.relativeError(momentum.to(ScalarType.Double), ref.momentum);
            assertTrue(mError <= TOLERANCE, "step " + step + " momentum: rel error " + mError);
            if (setting.config().norMuon() != null) {
                double vError = Tensors.relativeError(muon.secondMoment(p).orElseThrow(), ref.v);
                assertTrue(vError <= TOLERANCE, "step " + step + " v: rel error " + vError);
            }
        }
    }

    /** Each variant changes the trajectory: the plain update ends far from each reference, so the tests can fail. */
    @Test
    void eachVariant_movesAwayFromThePlainUpdate() {
        MuonConfig base = MuonConfig.defaults().withLr(0.05).withWeightDecay(0.5).withNsPrecision(NsPrecision.FLOAT64);
        long[] shape = {6, 4};
        for (MuonConfig variant : List.of(base.withCautiousWeightDecay(true),
                base.withMomentumPrecision(MomentumPrecision.BFLOAT16), base.withNorMuon(0.9, 1e-3))) {
            Random random = new Random(5);
            double[] values = Float64Update.gaussian(random, shape);
            Float64Update plain = new Float64Update(values, 1, 6, new int[]{2, 4}, base);
            Float64Update varied = new Float64Update(values, 1, 6, new int[]{2, 4}, variant);
            for (int step = 0; step < STEPS; step++) {
                double[] g = Float64Update.gaussian(random, shape);
                plain.step(g);
                varied.step(g);
            }
            double gap = Tensors.relativeError(plain.p, varied.p);
            assertTrue(gap > 1e-6, variant + ": the reference equals the plain update (gap " + gap + ")");
        }
    }
}
