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
 * Muown ({@link MuownConfig}) against the float64 reference written from its formula ({@link Float64Update}'s
 * {@code muownStep}): the parameter, the momentum and every per-row state, six steps, in float64 (1e-12 relative,
 * the golden suite's float64 tolerance) and on float32 parameters (1e-5, the conformance matrix's float32 bound).
 */
@ExtendWith(NativeScopePerTest.class)
class MuownReferenceTest {
    private static final int STEPS = 6;

    /** One setting: a parameter's shape, its row blocks (null: whole), the config. */
    record Setting(String name, long[] shape, int[] blocks, MuonConfig config) {
        @Override
        public String toString() {
            return name;
        }
    }

    static MuonConfig base() {
        return MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1).withMomentum(0.9).withNesterov(false)
                .withNsPrecision(NsPrecision.FLOAT64).withMuown(MuownConfig.defaults());
    }

    static Stream<Setting> settings() {
        MuonConfig base = base();
        return Stream.of(
                new Setting("defaults, wide", new long[]{5, 7}, null, base),
                new Setting("tall, other betas, no decay", new long[]{8, 3}, null, base.withWeightDecay(0)
                        .withMuown(new MuownConfig(0.8, 0.99, 1e-6))),
                new Setting("EO's spectral scale: MATCH_RMS_ADAMW, extraScale 5", new long[]{6, 4}, null,
                        base.withAdjustLr(AdjustLr.MATCH_RMS_ADAMW).withExtraScale(5)),
                new Setting("SPECTRAL (EO's unit_rms_norm)", new long[]{4, 9}, null,
                        base.withAdjustLr(AdjustLr.SPECTRAL)),
                new Setting("NorMuon", new long[]{6, 5}, null, base.withNorMuon(0.9, 1e-3)),
                new Setting("row split, unequal blocks", new long[]{10, 6}, new int[]{6, 2, 2}, base),
                new Setting("row split, equal blocks, NorMuon", new long[]{12, 4}, new int[]{4, 4, 4},
                        base.withNorMuon(0.9, 1e-3)));
    }

    static Stream<Arguments> cells() {
        List<Arguments> out = new ArrayList<>();
        settings().forEach(s -> {
            out.add(Arguments.of(s, ScalarType.Double));
            out.add(Arguments.of(s, ScalarType.Float));
        });
        return out.stream();
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("cells")
    void trajectory_matchesFloat64Reference(Setting setting, ScalarType dtype) {
        boolean float64 = dtype == ScalarType.Double;
        MuonConfig config = float64 ? setting.config() : setting.config().withNsPrecision(NsPrecision.FLOAT32);
        double tolerance = float64 ? 1e-12 : 1e-5;
        Random random = new Random(41);
        Tensor p = Tensors.of(Float64Update.gaussian(random, setting.shape()), setting.shape(), ScalarType.Double)
                .to(dtype).requires_grad_(true);
        Muon.Builder builder = Muon.builder().addGroup(List.of(p), config).names(List.of("w"));
        if (setting.blocks() != null) {
            builder.rowSplit(p, RowSplit.splitRows(setting.blocks()));
        }
        Muon muon = builder.build();
        Float64Update ref = new Float64Update(Tensors.values(p.to(ScalarType.Double)), 1,
                (int) setting.shape()[0], setting.blocks(), config);
        for (int step = 1; step <= STEPS; step++) {
            Tensor g = Tensors.of(Float64Update.gaussian(random, setting.shape()), setting.shape(), ScalarType.Double)
                    .to(dtype);
            p.mutable_grad().put(g);
            ref.step(Tensors.values(g.to(ScalarType.Double)));
            muon.step();
            assertClose("step " + step + " p", p, ref.p, tolerance);
            Tensor momentum = muon.momentumBuffer(p).orElseThrow();
            assertEquals(dtype.value, momentum.scalar_type().value);
            assertClose("step " + step + " momentum", momentum, ref.momentum, tolerance);
            assertClose("step " + step + " g", buffer(muon, "w", UpdateRecipe.MUOWN_G.key()), ref.muownG, tolerance);
            assertClose("step " + step + " v_norm", buffer(muon, "w", UpdateRecipe.MUOWN_V_NORM.key()),
                    ref.muownVNorm, tolerance);
            assertClose("step " + step + " m_g", buffer(muon, "w", UpdateRecipe.MUOWN_M_G.key()), ref.muownMG,
                    tolerance);
            assertClose("step " + step + " v_g", buffer(muon, "w", UpdateRecipe.MUOWN_V_G.key()), ref.muownVG,
                    tolerance);
            assertEquals(step, buffer(muon, "w", UpdateRecipe.MUOWN_STEP.key()).item_double());
        }
    }

    /** A parameter without a gradient in a step is not updated and does not count the step (as the reference). */
    @Test
    void parameterWithoutGradient_keepsItsOwnStepCount() {
        Random random = new Random(43);
        long[] shape = {4, 6};
        MuonConfig config = base();
        Tensor a = Tensors.of(Float64Update.gaussian(random, shape), shape, ScalarType.Double).requires_grad_(true);
        Tensor b = Tensors.of(Float64Update.gaussian(random, shape), shape, ScalarType.Double).requires_grad_(true);
        Float64Update refB = new Float64Update(Tensors.values(b), 1, 4, null, config);
        Muon muon = Muon.builder().addGroup(List.of(a, b), config).names(List.of("a", "b")).build();
        for (int step = 1; step <= 4; step++) {
            a.mutable_grad().put(Tensors.of(Float64Update.gaussian(random, shape), shape, ScalarType.Double));
            double[] gb = Float64Update.gaussian(random, shape);
            if (step == 2) {
                b.mutable_grad().put(new Tensor());
            } else {
                b.mutable_grad().put(Tensors.of(gb, shape, ScalarType.Double));
                refB.step(gb);
            }
            muon.step();
        }
        assertEquals(4, muon.stepCount());
        assertEquals(4, buffer(muon, "a", UpdateRecipe.MUOWN_STEP.key()).item_double());
        assertEquals(3, buffer(muon, "b", UpdateRecipe.MUOWN_STEP.key()).item_double());
        assertClose("b", b, refB.p, 1e-12);
    }

    /** Muown changes the trajectory: the plain update ends far from its reference, so the tests can fail. */
    @Test
    void muown_movesAwayFromThePlainUpdate() {
        MuonConfig plainConfig = base().withMuown(null);
        Random random = new Random(5);
        long[] shape = {6, 4};
        double[] values = Float64Update.gaussian(random, shape);
        Float64Update plain = new Float64Update(values, 1, 6, null, plainConfig);
        Float64Update muown = new Float64Update(values, 1, 6, null, base());
        for (int step = 0; step < STEPS; step++) {
            double[] g = Float64Update.gaussian(random, shape);
            plain.step(g);
            muown.step(g);
        }
        double gap = Tensors.relativeError(plain.p, muown.p);
        assertTrue(gap > 1e-3, "Muown's reference equals the plain update (gap " + gap + ")");
    }

    /** A declared buffer of a named parameter, from the optimizer's state. */
    private static Tensor buffer(Muon muon, String name, String key) {
        return muon.state().entry(name).orElseThrow().buffer(key);
    }

    private static void assertClose(String what, Tensor got, double[] expected, double tolerance) {
        double error = Tensors.relativeError(Tensors.values(got.to(ScalarType.Double)), expected);
        assertTrue(error <= tolerance, what + ": rel error " + error + " (bound " + tolerance + ")");
    }
}
