package dev.muon;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.muon.djl.Muon;
import dev.muon.golden.Float64Update;
import dev.muon.djl.ParamBlock;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NorMuon through muon-djl's {@link Muon} against muon-core's float64 reference of the paper's equations (Li et
 * al., arXiv 2510.05491, Algorithm 1), step by step, to 1e-12 relative. This test sits in muon-core's package only
 * to reuse that reference ({@code NorMuonReferenceTest.ReferenceParameter}, plain Java in muon-core's test jar)
 * rather than write it twice.
 */
class NorMuonDjlReferenceTest {
    private static final double TOLERANCE = 1e-12;
    private static final int STEPS = 6;

    static Stream<Arguments> settings() {
        MuonConfig base = MuonConfig.defaults().withLr(0.02).withWeightDecay(0.1).withMomentum(0.9)
                .withNsPrecision(NsPrecision.FLOAT64);
        return Stream.of(
                Arguments.of("wide and tall, Nesterov, defaults", List.of(new long[] {3, 5}, new long[] {6, 4}),
                        base.withNorMuon(NorMuonConfig.defaults())),
                Arguments.of("large eps, beta2 0, no Nesterov, MATCH_RMS_ADAMW, extraScale 1.5",
                        List.of(new long[] {4, 7}, new long[] {9, 2}),
                        base.withNesterov(false).withAdjustLr(AdjustLr.MATCH_RMS_ADAMW).withExtraScale(1.5)
                                .withNorMuon(0.0, 0.05)),
                Arguments.of("3-D stack", List.of(new long[] {2, 3, 5}),
                        base.withStackedWeights(StackedWeights.BATCH).withNorMuon(0.9, 1e-3)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("settings")
    void trajectory_matchesMuonCoresFloat64Reference(String label, List<long[]> shapes, MuonConfig config) {
        try (NDManager manager = NDManager.newBaseManager()) {
            Random random = new Random(17);
            ParamBlock block = new ParamBlock();
            List<NDArray> params = new ArrayList<>();
            List<NorMuonReferenceTest.ReferenceParameter> reference = new ArrayList<>();
            for (int i = 0; i < shapes.size(); i++) {
                double[] values = Float64Update.gaussian(random, shapes.get(i));
                NDArray p = manager.create(values, new Shape(shapes.get(i)));
                params.add(p);
                block.param("p" + i, p);
                reference.add(new NorMuonReferenceTest.ReferenceParameter(values, shapes.get(i)));
            }
            Muon muon = Muon.builder().optBlock(block).optConfig(config).build();
            List<String> ids = new ArrayList<>();
            block.getParameters().forEach(pair -> ids.add(pair.getValue().getId()));
            for (int step = 1; step <= STEPS; step++) {
                for (int i = 0; i < params.size(); i++) {
                    double[] g = Float64Update.gaussian(random, shapes.get(i));
                    reference.get(i).step(g, config);
                    muon.update(ids.get(i), params.get(i), manager.create(g, new Shape(shapes.get(i))));
                }
                for (int i = 0; i < params.size(); i++) {
                    double[] got = params.get(i).toDoubleArray();
                    double[] expected = reference.get(i).p;
                    double diff = 0;
                    double ref = 0;
                    for (int k = 0; k < got.length; k++) {
                        diff += (got[k] - expected[k]) * (got[k] - expected[k]);
                        ref += expected[k] * expected[k];
                    }
                    double error = Math.sqrt(diff / ref);
                    assertTrue(error <= TOLERANCE, label + " step " + step + " parameter " + i + ": rel error "
                            + error);
                }
            }
        }
    }
}
