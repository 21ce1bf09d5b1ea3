package dev.muon.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;
import dev.muon.golden.GoldenReader;
import dev.muon.orthogonalize.NsPrecision;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every {@code ns_*} golden case through {@link NsIteration} in DJL's float64 (1e-12 relative) and float32
 * (1e-5 relative), the tolerances of muon-core's golden README; and batches, which must give each matrix's own
 * result.
 */
class NsIterationGoldenTest {

    static Stream<Arguments> cases() {
        return GoldenReader.casesWith("ns_", DataType.FLOAT64, DataType.FLOAT32);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void orthogonalize_matchesGolden(GoldenCase c, DataType dtype) {
        NsPrecision precision = dtype == DataType.FLOAT64 ? NsPrecision.FLOAT64 : NsPrecision.FLOAT32;
        OrthogonalizerGolden.assertMatches(c, dtype, dtype == DataType.FLOAT64 ? 1e-12 : 1e-5,
                input -> NsIteration.orthogonalize(input, GoldenConfigs.newtonSchulz(c, precision)));
    }

    /**
     * A stack of two golden inputs of one shape gives each one's golden output: an all-zero matrix beside one whose
     * norm is below eps, so a norm taken over the whole stack, or a clamp applied to it, would show.
     */
    @Test
    void aBatch_orthogonalizesEachMatrixOnItsOwn() {
        GoldenCase zero = GoldenReader.read("ns_zero_5x3.txt");
        GoldenCase tiny = GoldenReader.read("ns_tiny_norm_5x3.txt");
        assertEquals(GoldenConfigs.newtonSchulz(zero, NsPrecision.FLOAT64), GoldenConfigs.newtonSchulz(tiny, NsPrecision.FLOAT64));
        try (NDManager manager = NDManager.newBaseManager()) {
            Shape shape = new Shape(5, 3);
            NDArray a = manager.create(zero.tensor("input", null, 0).data(), shape);
            NDArray b = manager.create(tiny.tensor("input", null, 0).data(), shape);
            NDArray out = NsIteration.orthogonalize(a.stack(b), GoldenConfigs.newtonSchulz(zero, NsPrecision.FLOAT64));
            assertEquals(new Shape(2, 5, 3), out.getShape());
            assertArrayEquals(zero.tensor("expected", null, 0).data(), Measures.values(out.get(0)), 0.0);
            double e1 = Measures.relativeError(Measures.values(out.get(1)), tiny.tensor("expected", null, 0).data());
            assertTrue(e1 <= 1e-12, "the tiny-norm matrix in a batch: rel error " + e1);
        }
    }
}
