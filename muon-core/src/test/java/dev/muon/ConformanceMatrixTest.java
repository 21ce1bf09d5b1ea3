package dev.muon;

import dev.muon.ConformanceCells.Place;
import dev.muon.golden.ConformanceMatrix;
import dev.muon.golden.ConformanceMatrix.Dtype;
import dev.muon.golden.ConformanceMatrix.Row;
import dev.muon.golden.NativeScopePerTest;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The conformance matrix ({@link ConformanceMatrix}) in muon-core at world size 1: every row × parameter dtype
 * (float64, float32, bfloat16, float16) × storage place (beside the parameter, in files), driven as a libtorch
 * training loop drives it ({@link ConformanceCells}), each cell within its dtype's bound of the float64 reference,
 * or refused at build as {@link ConformanceCells#refusal} declares, with the message naming the setting. A cell that
 * neither matches nor is refused as declared fails. World size 2 is {@code ConformanceMatrixDistributedTest}'s;
 * host memory the CUDA module's.
 */
@ExtendWith(NativeScopePerTest.class)
class ConformanceMatrixTest {
    static Stream<Arguments> cells() {
        return Stream.of(Dtype.values()).flatMap(dtype -> ConformanceMatrix.rows(dtype).stream()
                .flatMap(row -> Stream.of(Place.values()).map(place -> Arguments.of(row, dtype, place))));
    }

    @ParameterizedTest(name = "{1} {2}: {0}")
    @MethodSource("cells")
    void cell_matchesTheReference_orIsRefusedAsDeclared(Row row, Dtype dtype, Place place, @TempDir Path dir) {
        assertNull(ConformanceCells.run(row, dtype, place, dir, null), dtype + " " + place + " " + row);
    }
}
