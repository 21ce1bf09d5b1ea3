package dev.muon.cuda;

import dev.muon.MuonConfig;
import dev.muon.golden.Float64Update;
import dev.muon.golden.Tensors;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * AOL-preconditioned Newton–Schulz (Turbo-Muon's four steps, {@code MuonConfig.withAol()}) on {@code cuda:0}: the
 * orthogonalizer a CUDA parameter gets (in bfloat16 the kernels, with AOL's rescaling between their products; in
 * float32 libtorch's iteration) against the float64 formula, float32 and bfloat16, with muon-core's bounds (1e-5, 5e-2); and, printed for docs/cuda.md, the
 * time of one AOL call against five plain iterations (libtorch's and the kernels') at 1024×4096.
 */
@Tag("gpu")
@ExtendWith(RequireCuda.class)
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
class AolCudaGpuTest {
    private static Device cuda() {
        return new Device(torch.DeviceType.CUDA, (byte) 0);
    }

    static Stream<Arguments> cells() {
        List<Arguments> cells = new ArrayList<>();
        for (NsPrecision precision : List.of(NsPrecision.FLOAT32, NsPrecision.BFLOAT16)) {
            for (long[] shape : new long[][]{{48, 160}, {96, 96}, {200, 64}, {256, 1024}}) {
                cells.add(Arguments.of(precision, shape[0], shape[1]));
            }
        }
        return cells.stream();
    }

    @ParameterizedTest(name = "{0} {1}x{2}")
    @MethodSource("cells")
    void aol_onCuda_matchesTheFloat64Formula(NsPrecision precision, long rows, long cols) {
        try (PointerScope scope = new PointerScope()) {
            MuonConfig config = MuonConfig.defaults().withAol().withNsPrecision(precision);
            NewtonSchulzConfig ns = config.newtonSchulz();
            // What a CUDA parameter gets: the kernels in bfloat16 (AOL's rescaling between their products), libtorch's
            // iteration in float32.
            Optional<Orthogonalizer> served = new CudaOrthogonalizerProvider().create(ns, cuda());
            assertEquals(precision == NsPrecision.BFLOAT16, served.isPresent(), "the provider serves " + precision);
            Orthogonalizer o = served.orElseGet(() -> new NewtonSchulz(ns));
            Random random = new Random(rows * 31 + cols);
            double[] u = new double[(int) (rows * cols)];
            for (int i = 0; i < u.length; i++) {
                u[i] = (float) random.nextGaussian();
            }
            Tensor out = o.orthogonalize(
                    Tensors.of(u, new long[]{rows, cols}, ScalarType.Float).to(cuda(), ScalarType.Float));
            assertEquals(torch.DeviceType.CUDA.value, out.device().type().value);
            double[][] m = new double[(int) rows][(int) cols];
            for (int i = 0; i < rows; i++) {
                System.arraycopy(u, (int) (i * cols), m[i], 0, (int) cols);
            }
            double[][] expected = Float64Update.newtonSchulz(m, config);
            double[] flat = Arrays.stream(expected).flatMapToDouble(Arrays::stream).toArray();
            double error = Tensors.relativeError(out.cpu(), flat);
            double bound = precision == NsPrecision.BFLOAT16 ? 5e-2 : 1e-5;
            System.out.printf("AolCudaGpuTest: %s %dx%d %s rel error %.3e (bound %.0e)%n", precision, rows, cols,
                    o.getClass().getSimpleName(), error, bound);
            assertTrue(error <= bound, precision + " " + rows + "x" + cols + ": relative error " + error);
        }
    }

    @Test
    void aolAgainstFivePlainIterations_timeIsPrinted() {
        StringBuilder table = new StringBuilder("| 1024×4096 | orthogonalizer | ms per call (median of 20) |\n"
                + "| --- | --- | --- |\n");
        for (NsPrecision precision : List.of(NsPrecision.FLOAT32, NsPrecision.BFLOAT16)) {
            MuonConfig plain = MuonConfig.defaults().withNsPrecision(precision);
            for (MuonConfig config : List.of(plain, plain.withAol())) {
                try (PointerScope scope = new PointerScope()) {
                    NewtonSchulzConfig ns = config.newtonSchulz();
                    Orthogonalizer o = new CudaOrthogonalizerProvider().create(ns, cuda())
                            .orElseGet(() -> new NewtonSchulz(ns));
                    torch.manual_seed(4);
                    Tensor g = torch.randn(1024, 4096).to(cuda(), ScalarType.Float);
                    double[] ms = new double[20];
                    for (int i = -5; i < ms.length; i++) {
                        try (PointerScope call = new PointerScope()) {
                            synchronize();
                            long start = System.nanoTime();
                            Tensor out = o.orthogonalize(g);
                            synchronize();
                            if (i >= 0) {
                                ms[i] = (System.nanoTime() - start) / 1e6;
                            }
                            assertTrue(out.isfinite().all().item_bool(), "finite output");
                        }
                    }
                    Arrays.sort(ms);
                    table.append("| ").append(precision).append(", ").append(config.nsPreconditioning()).append(' ')
                            .append(config.nsSteps()).append(" steps | ").append(o.getClass().getSimpleName())
                            .append(" | ").append(String.format("%.3f", (ms[9] + ms[10]) / 2)).append(" |\n");
                }
            }
        }
        System.out.println("AolCudaGpuTest timings, cuda:0:\n" + table);
    }

    private static void synchronize() {
        torch.getDeviceGuardImpl(torch.DeviceType.CUDA).synchronizeDevice((byte) 0);
    }
}
