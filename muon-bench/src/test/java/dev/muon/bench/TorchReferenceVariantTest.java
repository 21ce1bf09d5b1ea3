package dev.muon.bench;

import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The same-libtorch baseline computes the same Newton–Schulz as the library, wide and tall. */
class TorchReferenceVariantTest {
    @ParameterizedTest
    @ValueSource(strings = {"48x160", "160x48"})
    void torchReference_matchesTheLibrarysPlainKernel(String shape) {
        NewtonSchulzBenchmark bench = new NewtonSchulzBenchmark();
        bench.shape = shape;
        bench.dtype = "float32";
        bench.variant = "torch-reference";
        bench.setUp();
        try (PointerScope scope = new PointerScope()) {
            Tensor ours = bench.torchReference();
            Tensor library = new NewtonSchulz(NewtonSchulzConfig.defaults().withNsAlgorithm(NsAlgorithm.GEMM))
                    .orthogonalize(bench.input());
            double diff = ours.sub(library).abs().max().item_double();
            assertTrue(diff < 1e-4, "max |torch-reference - NewtonSchulz| = " + diff);
            assertTrue(ours.abs().max().item_double() > 0.05, "the result is not trivially zero");
        } finally {
            bench.tearDown();
        }
    }
}
