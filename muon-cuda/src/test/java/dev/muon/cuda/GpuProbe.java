package dev.muon.cuda;

import dev.muon.Muon;
import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.cuda.cudart.cudaDeviceProp;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.bytedeco.pytorch.global.torch_cuda;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;

import static org.bytedeco.cuda.global.cudart.cudaDriverGetVersion;
import static org.bytedeco.cuda.global.cudart.cudaRuntimeGetVersion;

/**
 * The first check of the GPU test bundle ({@code docs/cuda.md}): does this JVM load libtorch's CUDA build, does
 * {@link CudaSupport} report the GPU available, and do a CUDA matrix product, one Newton–Schulz call through the
 * kernels and one {@link Muon} step with the fused update run? Prints one {@code probe: key=value} line per fact,
 * including the libtorch and CUDA files the process has mapped (which tells a run on the machine's own libtorch
 * from one on the bundle's).
 *
 * <p>Exit status: 0 when the GPU is available and every check passed; 2 when there is no usable GPU (the line
 * {@code probe: gpu=unavailable} gives {@link CudaSupport#unavailabilityCause()}), which is not a failure on a
 * machine without one; 1 when a check failed on a GPU.
 *
 * <p>How to run: {@code run.sh main dev.muon.cuda.GpuProbe} in the GPU test bundle.
 */
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
final class GpuProbe {
    static final int PASSED = 0;
    static final int FAILED = 1;
    static final int NO_GPU = 2;

    private GpuProbe() {
    }

    public static void main(String[] args) {
        System.exit(run(System.out));
    }

    /** Runs the probe, printing to {@code out}; returns the exit status. */
    static int run(PrintStream out) {
        out.println("probe: java=" + System.getProperty("java.version") + " vm=" + System.getProperty("java.vm.name"));
        out.println("probe: javacpp.platform=" + org.bytedeco.javacpp.Loader.getPlatform() + " extension="
                + System.getProperty(CudaSupport.PLATFORM_EXTENSION_PROPERTY, ""));
        if (!CudaSupport.isAvailable()) {
            out.println("probe: gpu=unavailable cause=" + CudaSupport.unavailabilityCause().getMessage());
            try {
                // The probe may stop before libtorch loads (no kernels in the jar); the map should still show it.
                out.println("probe: libtorch_cpu=" + (torch.ones(2).sum().item_double() == 2 ? "ok" : "FAILED"));
            } catch (RuntimeException | Error e) {
                out.println("probe: libtorch_cpu=FAILED " + e);
            }
            mappedLibraries(out);
            return NO_GPU;
        }
        out.println("probe: gpu=available");
        try (PointerScope scope = new PointerScope()) {
            device(out);
            mappedLibraries(out);
            boolean ok = matmul(out);
            ok &= newtonSchulz(out);
            ok &= muonStep(out);
            out.println("probe: result=" + (ok ? "passed" : "FAILED"));
            return ok ? PASSED : FAILED;
        } catch (RuntimeException | Error e) {
            out.println("probe: result=FAILED " + e);
            e.printStackTrace(out);
            return FAILED;
        }
    }

    private static Device cuda() {
        return new Device(torch.DeviceType.CUDA, (byte) 0);
    }

    private static void device(PrintStream out) {
        cudaDeviceProp p = torch_cuda.getDeviceProperties((byte) 0);
        IntPointer driver = new IntPointer(1);
        IntPointer runtime = new IntPointer(1);
        cudaDriverGetVersion(driver);
        cudaRuntimeGetVersion(runtime);
        out.println("probe: device=" + p.name().getString() + " capability=" + p.major() + "." + p.minor()
                + " sms=" + p.multiProcessorCount() + " memory_mib=" + p.totalGlobalMem() / (1 << 20)
                + " devices=" + torch_cuda.device_count());
        out.println("probe: cuda_driver_api=" + driver.get() + " cuda_runtime=" + runtime.get());
    }

    /** The libtorch, CUDA, OpenBLAS and JNI files in this process's memory map, from {@code /proc/self/maps}. */
    static void mappedLibraries(PrintStream out) {
        try {
            TreeSet<String> files = new TreeSet<>();
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int slash = line.indexOf('/');
                if (slash < 0) {
                    continue;
                }
                String file = line.substring(slash);
                String name = file.substring(file.lastIndexOf('/') + 1);
                if (name.matches("lib(jni|torch|c10|cu|nccl|gomp|openblas).*")) {
                    files.add(file);
                }
            }
            for (String file : files) {
                out.println("probe: mapped=" + file);
            }
        } catch (IOException e) {
            out.println("probe: mapped=unknown (" + e + ")");
        }
    }

    /** A float32 product on the GPU against the same product on the CPU. */
    private static boolean matmul(PrintStream out) {
        torch.manual_seed(1);
        Tensor a = torch.randn(1024, 1024);
        Tensor b = torch.randn(1024, 1024);
        Tensor cpu = a.matmul(b);
        Tensor gpu = a.to(cuda(), ScalarType.Float).matmul(b.to(cuda(), ScalarType.Float)).cpu();
        double error = gpu.sub(cpu).norm().item_double() / cpu.norm().item_double();
        // TF32 is off for float32 products in libtorch by default; float32 sums in another order differ by ~1e-6.
        boolean ok = error < 1e-4;
        out.printf(Locale.ROOT, "probe: matmul_1024 rel_error=%.3e %s%n", error, ok ? "ok" : "FAILED");
        return ok;
    }

    /** One bfloat16 Newton–Schulz call through the kernels (forced) against libtorch's float64 iteration. */
    private static boolean newtonSchulz(PrintStream out) {
        NewtonSchulzConfig bf16 = NewtonSchulzConfig.defaults().withNsPrecision(NsPrecision.BFLOAT16);
        Tensor g = torch.randn(new long[]{1024, 1024}, new TensorOptions(ScalarType.Float)
                .device(new DeviceOptional(cuda())));
        Tensor exact = new NewtonSchulz(bf16.withNsPrecision(NsPrecision.FLOAT64)).orthogonalize(g)
                .to(ScalarType.Double);
        System.setProperty(CudaSupport.FORCE_PROPERTY, "true");
        Tensor o;
        try {
            o = new CudaNewtonSchulz(bf16, cuda()).orthogonalize(g);
        } finally {
            System.clearProperty(CudaSupport.FORCE_PROPERTY);
        }
        torch_cuda.device_synchronize();
        double error = o.to(ScalarType.Double).sub(exact).norm().item_double() / exact.norm().item_double();
        // docs/cuda.md: the kernels' whole NS is 0.68-1.0e-2 from float64 at these sizes.
        boolean ok = error < 0.05;
        out.printf(Locale.ROOT, "probe: newton_schulz_1024_kernels rel_error_vs_float64=%.3e %s%n", error,
                ok ? "ok" : "FAILED");
        return ok;
    }

    /** One Muon step on a CUDA parameter, the fused momentum and update included, against a CPU step. */
    private static boolean muonStep(PrintStream out) {
        MuonConfig config = MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.BFLOAT16);
        torch.manual_seed(2);
        Tensor start = torch.randn(256, 512);
        Tensor grad = torch.randn(256, 512);
        Tensor onGpu = start.to(cuda(), ScalarType.Float).requires_grad_(true);
        Tensor onCpu = start.clone().requires_grad_(true);
        boolean fused = new dev.muon.cuda.internal.CudaFusedUpdateKernelsProvider()
                .forParameter(onGpu, ScalarType.BFloat16).isPresent();
        Muon gpu = Muon.of(List.of(onGpu), config);
        Muon cpu = Muon.of(List.of(onCpu), config);
        onGpu.mutable_grad().put(grad.to(cuda(), ScalarType.Float));
        onCpu.mutable_grad().put(grad.clone());
        gpu.step();
        cpu.step();
        double error = onGpu.detach().cpu().sub(onCpu.detach()).abs().max().item_double();
        // shared/golden/README.md: a bfloat16 iteration keeps parameters within 0.2·lr·steps absolute.
        boolean ok = error <= 0.2 * config.lr() && fused;
        out.printf(Locale.ROOT, "probe: muon_step fused_update=%s max_abs_diff_vs_cpu=%.3e %s%n", fused, error,
                ok ? "ok" : "FAILED");
        return ok;
    }
}
