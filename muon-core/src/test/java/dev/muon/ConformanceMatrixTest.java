package dev.muon;

import dev.muon.golden.ConformanceMatrix;
import dev.muon.golden.ConformanceMatrix.Dtype;
import dev.muon.golden.ConformanceMatrix.Row;
import dev.muon.golden.Float64Update;
import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The conformance matrix ({@link ConformanceMatrix}) in muon-core: every row × parameter dtype (float64, float32,
 * bfloat16, float16) × storage place (beside the parameter, in files), driven as a libtorch training loop drives it
 * ({@code backward()} of a loss whose gradient is the drawn one, then {@code step()}), each cell within its dtype's
 * bound of the float64 reference, or refused at build as {@link #refusal} declares, with the message naming the
 * setting. A cell that neither matches nor is refused as declared fails. World size 2 is the state-storage
 * worker's ({@code StateStorageEqualityWorker}: the combination cells bit-identical at W = 1, 2 and 3), host memory
 * the CUDA module's.
 */
@ExtendWith(NativeScopePerTest.class)
class ConformanceMatrixTest {
    /** Where the Muon state lives in a column. */
    enum Place { BESIDE, FILES }

    static Stream<Arguments> cells() {
        return Stream.of(Dtype.values()).flatMap(dtype -> ConformanceMatrix.rows(dtype).stream()
                .flatMap(row -> Stream.of(Place.values()).map(place -> Arguments.of(row, dtype, place))));
    }

    /**
     * What muon-core refuses, by cell, as the start of the message: Hyperball with cautious decay, refused when the
     * config is made (cautious decay is a weight decay, which the sphere replaces); nothing else: every element runs
     * in every dtype and place.
     */
    static String refusal(Row row, Dtype dtype) {
        if (row.has("cautious decay") && (row.has("Hyperball") || row.has("Hyperball radius 3"))) {
            return "cautiousWeightDecay must be false with hyperball";
        }
        return null;
    }

    @ParameterizedTest(name = "{1} {2}: {0}")
    @MethodSource("cells")
    void cell_matchesTheReference_orIsRefusedAsDeclared(Row row, Dtype dtype, Place place, @TempDir Path dir) {
        String refusal = refusal(row, dtype);
        if (row.config() == null) {
            assertTrue(refusal != null && row.refusal().startsWith(refusal),
                    "the config refused a cell the table says runs: " + row.refusal());
            return;
        }
        ScalarType type = scalarType(dtype);
        Random random = new Random(row.name().hashCode() * 31L + dtype.ordinal());
        Tensor p = Tensors.of(Float64Update.gaussian(random, row.shape()), row.shape(), ScalarType.Double).to(type)
                .requires_grad_(true);
        Float64Update reference = ConformanceMatrix.reference(row, Tensors.values(p.to(ScalarType.Double)));
        StateStorage storage = place == Place.FILES ? StateStorage.files(dir) : StateStorage.withParameter();
        Muon.Builder builder = Muon.builder().addGroup(List.of(p), row.config()).stateStorage(storage)
                .names(List.of("hidden.weight"));
        if (refusal != null) {
            Tensor before = p.detach().clone();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, builder::build);
            assertTrue(e.getMessage().contains(refusal), e.getMessage());
            assertTrue(before.equal(p.detach()), "the refused build changed the parameter");
            return;
        }
        try (Muon muon = builder.build()) {
            for (int step = 1; step <= ConformanceMatrix.STEPS; step++) {
                Tensor g = Tensors.of(Float64Update.gaussian(random, row.shape()), row.shape(), ScalarType.Double)
                        .to(type);
                reference.step(Tensors.values(g.to(ScalarType.Double)));
                if (p.grad().defined()) {
                    p.mutable_grad().zero_();
                }
                // The driver's path: the loss Σ p ⊙ g has gradient g, which backward() leaves in p.grad.
                p.mul(g).sum().backward();
                muon.step();
            }
        }
        assertEquals(type.value, p.scalar_type().value, "the parameter keeps its dtype");
        double error = Tensors.relativeError(Tensors.values(p.to(ScalarType.Double)), reference.p);
        double bound = dtype.bound(row.config());
        assertTrue(error <= bound, dtype + " " + place + " " + row + ": parameter rel error " + error + " (bound "
                + bound + ")");
        if (place == Place.FILES) {
            try (Stream<Path> left = Files.list(dir)) {
                assertEquals(0, left.count(), "close() left state files");
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    private static ScalarType scalarType(Dtype dtype) {
        return switch (dtype) {
            case FLOAT64 -> ScalarType.Double;
            case FLOAT32 -> ScalarType.Float;
            case BFLOAT16 -> ScalarType.BFloat16;
            case FLOAT16 -> ScalarType.Half;
        };
    }
}
