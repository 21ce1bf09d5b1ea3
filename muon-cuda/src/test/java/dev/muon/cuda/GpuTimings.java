package dev.muon.cuda;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import dev.muon.orthogonalize.Orthogonalizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.cuda.CUDAEvent;
import org.bytedeco.pytorch.cuda.CUDAStream;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch_cuda;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * What does the JVM add to a Newton–Schulz call on the GPU, and what does the fused update save in a step? Two
 * measurements on {@code cuda:0}, printed as {@code timings: ...} lines and, with {@code -Dmuon.gpu.out=DIR}, written
 * to {@code DIR/timings.json}:
 *
 * <ul>
 * <li>per NS call (bfloat16, 5 steps), for {@link CudaNewtonSchulz} (the shipped policy) and libtorch's
 * {@link NewtonSchulz} at 768×768, 3072×768 and 4096×4096: {@code host_us}, the time the calling thread spends in
 * {@code orthogonalize} (argument checks, JNI, launches; the GPU is kept busy by float32 products queued before,
 * so nothing waits for it); {@code gpu_us}, the CUDA-event time of the same call's work on the stream; and
 * {@code sync_us}, a call followed by a device synchronize, as a single call costs;</li>
 * <li>one {@link Muon} step (bfloat16 NS) over the 24 hidden matrices of a GPT-2-small-width model (d = 768, 4
 * blocks: q, k, v, o of 768×768, MLP 3072×768 and 768×3072, float32 on the GPU, as muon-bench's
 * {@code MuonStepBenchmark}), with the fused momentum and update and with libtorch's ops for them
 * ({@value CudaSupport#DISABLE_FUSED_UPDATES_PROPERTY}), synchronized after each step.</li>
 * </ul>
 *
 * <p>Medians over {@code -Dmuon.gpu.timingRuns} (default 30) measured calls or steps after 5 warm-ups. Exit status 2
 * without a GPU, with the cause. How to run: {@code run.sh main dev.muon.cuda.GpuTimings} in the GPU test bundle.
 */
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
final class GpuTimings {
    private static final int WARMUP = 5;
    private static final int D = 768;
    private static final int LAYERS = 4;

    private GpuTimings() {
    }

    public static void main(String[] args) throws IOException {
        System.exit(run(System.out, Integer.getInteger("muon.gpu.timingRuns", 30), System.getProperty("muon.gpu.out")));
    }

    /** Measures and prints; writes {@code timings.json} under {@code outDir} unless it is null. */
    static int run(PrintStream out, int runs, String outDir) throws IOException {
        if (!CudaSupport.isAvailable()) {
            out.println("timings: gpu=unavailable cause=" + CudaSupport.unavailabilityCause().getMessage());
            return GpuProbe.NO_GPU;
        }
        List<String> json = new ArrayList<>();
        try (PointerScope scope = new PointerScope()) {
            NewtonSchulzConfig bf16 = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16);
            for (long[] shape : List.of(new long[]{D, D}, new long[]{4 * D, D}, new long[]{4096, 4096})) {
                json.add(nsCall(out, "CudaNewtonSchulz", new CudaNewtonSchulz(bf16, cuda()), shape, runs));
                json.add(nsCall(out, "libtorch", new NewtonSchulz(bf16), shape, runs));
            }
            json.add(step(out, true, runs));
            json.add(step(out, false, runs));
        }
        if (outDir != null) {
            Path dir = Files.createDirectories(Path.of(outDir));
            Files.writeString(dir.resolve("timings.json"), "[\n  " + String.join(",\n  ", json) + "\n]\n",
                    StandardCharsets.UTF_8);
        }
        return 0;
    }

    private static Device cuda() {
        return new Device(torch.DeviceType.CUDA, (byte) 0);
    }

    private static TensorOptions cudaFloat() {
        return new TensorOptions(ScalarType.Float).device(new DeviceOptional(cuda()));
    }

    private static String nsCall(PrintStream out, String name, Orthogonalizer o, long[] shape, int runs) {
        Tensor g = torch.randn(shape, cudaFloat());
        Tensor busy = torch.randn(new long[]{4096, 4096}, cudaFloat());
        double[] host = new double[runs];
        double[] gpu = new double[runs];
        double[] sync = new double[runs];
        for (int i = -WARMUP; i < runs; i++) {
            try (PointerScope call = new PointerScope()) {
                CUDAStream stream = torch_cuda.getCurrentCUDAStream((byte) 0);
                // Flags 0: a timing event (the default constructor's flags disable timing).
                CUDAEvent start = new CUDAEvent(0);
                CUDAEvent end = new CUDAEvent(0);
                // About 3 ms each on an H100: the stream is still busy when the NS call's launches arrive.
                for (int k = 0; k < 3; k++) {
                    busy.matmul(busy);
                }
                start.record(stream);
                long t0 = System.nanoTime();
                o.orthogonalize(g);
                long t1 = System.nanoTime();
                end.record(stream);
                end.synchronize();
                long t2 = System.nanoTime();
                o.orthogonalize(g);
                torch_cuda.device_synchronize();
                long t3 = System.nanoTime();
                if (i >= 0) {
                    host[i] = (t1 - t0) / 1e3;
                    gpu[i] = start.elapsed_time(end) * 1e3;
                    sync[i] = (t3 - t2) / 1e3;
                }
            }
        }
        String shapeText = shape[0] + "x" + shape[1];
        out.printf(Locale.ROOT, "timings: ns %-16s %-9s host_us=%.1f gpu_us=%.1f sync_us=%.1f host/gpu=%.3f%n",
                name, shapeText, median(host), median(gpu), median(sync), median(host) / median(gpu));
        return String.format(Locale.ROOT, "{\"what\": \"ns\", \"orthogonalizer\": \"%s\", \"shape\": \"%s\", "
                        + "\"host_us\": %.2f, \"gpu_us\": %.2f, \"sync_us\": %.2f, \"runs\": %d}", name, shapeText,
                median(host), median(gpu), median(sync), runs);
    }

    private static String step(PrintStream out, boolean fused, int runs) {
        torch.manual_seed(3);
        List<Tensor> params = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            for (int k = 0; k < 4; k++) {
                params.add(torch.randn(new long[]{D, D}, cudaFloat()));
            }
            params.add(torch.randn(new long[]{4 * D, D}, cudaFloat()));
            params.add(torch.randn(new long[]{D, 4 * D}, cudaFloat()));
        }
        for (Tensor p : params) {
            p.requires_grad_(true);
            p.mutable_grad().put(torch.randn(p.shape(), cudaFloat()));
        }
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.BFLOAT16);
        Supplier<Muon> build = () -> Muon.of(params, config);
        Muon muon;
        if (fused) {
            muon = build.get();
        } else {
            System.setProperty(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY, "true");
            try {
                muon = build.get();
            } finally {
                System.clearProperty(CudaSupport.DISABLE_FUSED_UPDATES_PROPERTY);
            }
        }
        double[] ms = new double[runs];
        for (int i = -WARMUP; i < runs; i++) {
            try (PointerScope stepScope = new PointerScope()) {
                torch_cuda.device_synchronize();
                long t0 = System.nanoTime();
                muon.step();
                torch_cuda.device_synchronize();
                long t1 = System.nanoTime();
                if (i >= 0) {
                    ms[i] = (t1 - t0) / 1e6;
                }
            }
        }
        String label = fused ? "fused" : "libtorch-ops";
        out.printf(Locale.ROOT, "timings: gpt2-small-width muon step (24 matrices, bf16 NS) update=%-12s ms=%.3f "
                + "(min %.3f)%n", label, median(ms), Arrays.stream(ms).min().orElse(Double.NaN));
        return String.format(Locale.ROOT, "{\"what\": \"gpt2-small-width step\", \"update\": \"%s\", "
                + "\"ms\": %.3f, \"min_ms\": %.3f, \"runs\": %d}", label, median(ms),
                Arrays.stream(ms).min().orElse(Double.NaN), runs);
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
