package dev.muon;

import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replays every {@code hybrid_*} golden trajectory through {@link MuonAdamW} (with libtorch's own AdamW on the
 * AdamW side) and checks, per step, every parameter, Muon's momentum buffers and AdamW's moments, with the
 * tolerances of {@code golden/README.md}: 1e-12 in float64, 1e-5 in float32.
 */
class MuonAdamWGoldenTest {

    record Precision(String label, ScalarType type, NsPrecision ns, double paramAbs, double stateRel) {
        @Override
        public String toString() {
            return label;
        }
    }

    static Stream<Arguments> cases() {
        return GoldenReader.casesWith("hybrid_",
                new Precision("float64", ScalarType.Double, NsPrecision.FLOAT64, 1e-12, 1e-12),
                new Precision("float32", ScalarType.Float, NsPrecision.FLOAT32, 1e-5, 1e-5));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void trajectory_matchesGolden(GoldenCase c, Precision precision) {
        try (PointerScope scope = new PointerScope()) {
            Map<String, Tensor> named = new LinkedHashMap<>();
            for (GoldenCase.Param p : c.params()) {
                named.put(p.name(), Tensors.of(c.tensor("param", p.name(), 0), precision.type()).requires_grad_(true));
            }
            MuonAdamW opt = MuonAdamW.builder(named)
                    .muon(GoldenConfigs.muon(c, precision.ns()))
                    .adamW(GoldenConfigs.adamW(c))
                    .build();
            for (GoldenCase.Param p : c.params()) {
                OptimizerKind expected = OptimizerKind.valueOf(p.optimizer().toUpperCase(Locale.ROOT));
                Assignment.Row row = opt.assignment().rows().stream()
                        .filter(r -> r.name().equals(p.name())).findFirst().orElseThrow();
                assertEquals(expected, row.optimizer(), p.name() + " is assigned by the default rule");
            }
            int steps = c.integer("num_steps");
            for (int k = 1; k <= steps; k++) {
                for (GoldenCase.Param p : c.params()) {
                    named.get(p.name()).mutable_grad().put(Tensors.of(c.tensor("grad", p.name(), k), precision.type()));
                }
                opt.step();
                for (GoldenCase.Param p : c.params()) {
                    String where = c.name() + " " + precision + " step " + k + " " + p.name();
                    Tensor param = named.get(p.name());
                    double paramError = Tensors.maxAbsError(param, c.tensor("param", p.name(), k).data());
                    assertTrue(paramError <= precision.paramAbs(), where + ": param abs error " + paramError);
                    if (p.optimizer().equals("muon")) {
                        double e = Tensors.relativeError(opt.muonState(p.name()).orElseThrow().momentum(),
                                c.tensor("momentum_buffer", p.name(), k).data());
                        assertTrue(e <= precision.stateRel(), where + ": momentum_buffer rel error " + e);
                    } else {
                        AdamWState m = opt.adamWState(p.name()).orElseThrow();
                        assertEquals(k, m.step(), where + ": AdamW step count");
                        double e1 = Tensors.relativeError(m.expAvg(), c.tensor("exp_avg", p.name(), k).data());
                        double e2 = Tensors.relativeError(m.expAvgSq(), c.tensor("exp_avg_sq", p.name(), k).data());
                        assertTrue(e1 <= precision.stateRel(), where + ": exp_avg rel error " + e1);
                        assertTrue(e2 <= precision.stateRel(), where + ": exp_avg_sq rel error " + e2);
                    }
                }
            }
        }
    }
}
