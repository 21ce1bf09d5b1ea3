package dev.muon.djl;

import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.MomentumPrecision;
import dev.muon.MuonConfig;
import dev.muon.golden.Float64Update;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The update variants of {@link MuonConfig} through muon-djl: each is computed as muon-core computes it (checked
 * against the float64 reference written from the formulas, {@link Float64Update}) or refused at build, naming the
 * setting; never accepted and ignored.
 */
class UpdateVariantsTest {
    /** The combination table's float64 bound: Newton–Schulz in float64 on float64 parameters. */
    private static final double FLOAT64_REL = 1e-10;
    private static final int STEPS = 3;
    @RegisterExtension
    static final ClassManager manager = new ClassManager();

    @Test
    void cautiousWeightDecay_matchesTheFloat64Reference() {
        MuonConfig config = MuonConfig.defaults().withLr(0.05).withWeightDecay(0.5).withCautiousWeightDecay(true)
                .withNsPrecision(NsPrecision.FLOAT64);
        double[] muonDisplacement = displacementError(config);
        assertTrue(muonDisplacement[0] <= FLOAT64_REL, "cautious decay: parameter rel error " + muonDisplacement[0]);
        // The check can fail: plain decay on the same run lands measurably elsewhere.
        assertTrue(muonDisplacement[1] > 1e-4, "cautious and plain decay differ by only " + muonDisplacement[1]);
    }

    /**
     * Three steps of {@link Muon} on one 6×10 float64 matrix against the reference; returns the relative error of
     * the parameter, and its relative distance to the reference run with plain decay.
     */
    private static double[] displacementError(MuonConfig config) {
        Random random = new Random(11);
        long[] shape = {6, 10};
        double[] values = Float64Update.gaussian(random, shape);
        Float64Update ref = new Float64Update(values, 1, 6, null, config);
        Float64Update plain = new Float64Update(values, 1, 6, null, config.withCautiousWeightDecay(false));
        double[] got = MuonReferenceRun.run(manager.get(), config, values, shape, random, STEPS, g -> {
            ref.step(g);
            plain.step(g);
        });
        return new double[]{Measures.relativeError(got, ref.p), Measures.relativeError(plain.p, ref.p)};
    }

    static Stream<Arguments> refusedSettings() {
        MuonConfig bf16Momentum = MuonConfig.defaults().withMomentumPrecision(MomentumPrecision.BFLOAT16);
        String message = "momentumPrecision = BFLOAT16 is not supported by muon-djl: DJL's bfloat16 arrays abort the "
                + "JVM, so the momentum buffer cannot be stored in bfloat16";
        return Stream.of(
                Arguments.of("Muon", (Executable) () -> Muon.builder().optBlock(block()).optConfig(bf16Momentum)
                        .build(), message),
                Arguments.of("MuonAdamW", (Executable) () -> MuonAdamW.builder().optBlock(block())
                        .optMuon(bf16Momentum).build(), message));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusedSettings")
    void bfloat16Momentum_isRefusedAtBuild(String optimizer, Executable build, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build);
        assertEquals(message, e.getMessage());
    }

    private static ParamBlock block() {
        return new ParamBlock().param("w", manager.get().ones(new Shape(4, 4), DataType.FLOAT32));
    }
}
