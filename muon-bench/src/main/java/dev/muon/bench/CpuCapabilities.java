package dev.muon.bench;

import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.NativeKernels;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsAlgorithm;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;

/**
 * What instruction sets our side of a benchmark runs with: the CPU, muon-core's native kernel variant
 * ({@link NativeKernels#variant()}), libtorch's ATen CPU capability, and the OpenBLAS libraries this JVM mapped (whose
 * {@code openblas_get_corename()} {@code muon-bench/peer/isa_check.py} then asks, since the bindings expose none).
 * Before listing them it runs a float32 and a bfloat16 product and a float32 Newton–Schulz, so that every library
 * that the benchmarks use is loaded, and so that with {@code ONEDNN_VERBOSE=1} in the environment oneDNN prints the
 * implementation (and ISA) of each primitive it runs.
 *
 * <p>How to run (what {@code compare.sh} does for its AVX2 window):
 * <pre>
 * ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell ONEDNN_VERBOSE=1 \
 *     java -Ddev.muon.native.isa=avx2 -cp muon-bench/target/benchmarks.jar dev.muon.bench.CpuCapabilities
 * </pre>
 * Output: one {@code key: value} line each for {@code cpu}, {@code muon.native}, {@code aten.capability} and every
 * {@code openblas.library}.
 */
public final class CpuCapabilities {
    private CpuCapabilities() {
    }

    /**
     * Prints the lines described in the class javadoc.
     *
     * @param args none
     * @throws IOException if {@code /proc/self/maps} cannot be read
     */
    public static void main(String[] args) throws IOException {
        TorchNatives.extract();
        try (PointerScope scope = new PointerScope()) {
            // 512: libtorch calls oneDNN for bfloat16 products from about this size, not for small ones.
            Tensor f = torch.randn(512, 512);
            torch.mm(f, f.t());
            Tensor b = f.to(ScalarType.BFloat16);
            torch.mm(b, b.t());
            new NewtonSchulz(NewtonSchulzConfig.defaults().withNsAlgorithm(NsAlgorithm.SYMMETRIC)
                    .withNsPrecision(NsPrecision.FLOAT32)).orthogonalize(torch.randn(256, 300));
        }
        System.out.println("cpu: " + cpu());
        System.out.println(summary());
        for (String library : mappedOpenBlas()) {
            System.out.println("openblas.library: " + library);
        }
    }

    /**
     * Our side's instruction sets in one line, for the benchmarks' set-up output.
     *
     * @return {@code muon.native: ...} and {@code aten.capability: ...} on two lines
     */
    static String summary() {
        String nativeKernels = NativeKernels.variant().map(v -> v.propertyValue() + " (" + v.features() + ")")
                .orElseGet(() -> "off: " + NativeKernels.unavailabilityCause().getMessage());
        return "muon.native: " + nativeKernels + "\naten.capability: " + torch.get_cpu_capability().getString();
    }

    /** The CPU's model name, family and model, from {@code /proc/cpuinfo} (Linux), or {@code os.arch}. */
    static String cpu() {
        try {
            String name = null;
            String family = null;
            String model = null;
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                String[] kv = line.split(":", 2);
                if (kv.length < 2) {
                    continue;
                }
                String key = kv[0].trim();
                String value = kv[1].trim();
                if (key.equals("model name") && name == null) {
                    name = value;
                } else if (key.equals("cpu family") && family == null) {
                    family = value;
                } else if (key.equals("model") && model == null) {
                    model = value;
                }
            }
            return name + " (family " + family + ", model " + model + ")";
        } catch (IOException e) {
            return System.getProperty("os.arch") + " (no /proc/cpuinfo: " + e.getMessage() + ")";
        }
    }

    /** The OpenBLAS files this process mapped, from {@code /proc/self/maps}. */
    private static Set<String> mappedOpenBlas() throws IOException {
        Set<String> out = new TreeSet<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            int slash = line.indexOf('/');
            if (slash >= 0 && line.substring(slash).matches(".*/libopenblas[^/]*\\.so[^/]*")) {
                out.add(line.substring(slash).trim());
            }
        }
        return out;
    }
}
