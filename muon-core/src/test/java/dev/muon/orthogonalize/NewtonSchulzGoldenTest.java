package dev.muon.orthogonalize;

import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.golden.Tensors;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every {@code ns_*} golden case, in three precisions, with the tolerances of {@code shared/golden/README.md}:
 * 1e-12 relative in float64, 1e-5 in float32, 0.25 for a bfloat16 iteration.
 */
class NewtonSchulzGoldenTest {

    static Stream<Arguments> cases() {
        List<GoldenCase> cases = GoldenReader.cases(n -> n.startsWith("ns_"));
        return cases.stream().flatMap(c -> Stream.of(
                Arguments.of(c, NsPrecision.FLOAT64, NsAlgorithm.GEMM, ScalarType.Double, 1e-12),
                Arguments.of(c, NsPrecision.FLOAT64, NsAlgorithm.SYMMETRIC, ScalarType.Double, 1e-12),
                Arguments.of(c, NsPrecision.FLOAT32, NsAlgorithm.GEMM, ScalarType.Float, 1e-5),
                Arguments.of(c, NsPrecision.FLOAT32, NsAlgorithm.SYMMETRIC, ScalarType.Float, 1e-5),
                Arguments.of(c, NsPrecision.FLOAT64, NsAlgorithm.GRAM, ScalarType.Double, 1e-12),
                Arguments.of(c, NsPrecision.FLOAT32, NsAlgorithm.GRAM, ScalarType.Float, 1e-5),
                Arguments.of(c, NsPrecision.BFLOAT16, NsAlgorithm.AUTO, ScalarType.Float, 0.25),
                Arguments.of(c, NsPrecision.BFLOAT16, NsAlgorithm.SYMMETRIC, ScalarType.Float, 0.25),
                Arguments.of(c, NsPrecision.BFLOAT16, NsAlgorithm.GRAM, ScalarType.Float, 0.25)));
    }

    @ParameterizedTest(name = "{0} {1} {2}")
    @MethodSource("cases")
    void newtonSchulz_matchesGolden(GoldenCase c, NsPrecision precision, NsAlgorithm algorithm, ScalarType inputType,
                                    double tolerance) {
        try (PointerScope scope = new PointerScope()) {
            NewtonSchulzConfig config = GoldenConfigs.newtonSchulz(c, precision).withNsAlgorithm(algorithm);
            Tensor input = Tensors.of(c.tensor("input", null, 0), inputType);
            Tensor out = new NewtonSchulz(config).orthogonalize(input);

            assertEquals(precision.scalarType().value, out.scalar_type().value);
            assertEquals(List.of(c.shape()[0], c.shape()[1]), List.of(out.size(0), out.size(1)));
            double error = Tensors.relativeError(out, c.tensor("expected", null, 0).data());
            assertTrue(error <= tolerance, c.name() + " " + precision + " " + algorithm + ": relative error " + error
                    + " exceeds " + tolerance);
        }
    }
}
