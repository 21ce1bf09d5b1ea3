package dev.muon.cuda;

import dev.muon.AdamWConfig;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A short training run on {@code cuda:0}: {@link MuonAdamW} with bfloat16 Newton–Schulz, so that the hidden matrices
 * go through {@link CudaNewtonSchulz} inside real optimizer steps, fits a small MLP to a random teacher network, and
 * libtorch's {@code AdamW} (lr 1e-3, MuonAdamW's AdamW side) fits the same network from the same start for
 * comparison. It prints the loss against steps and seconds for both; with {@code -D}{@value #OUT_PROPERTY}{@code =DIR}
 * it also appends them to {@code DIR/training.csv} ({@code optimizer,step,loss,seconds}). Runs with
 * {@code mvn -Pgpu -pl muon-cuda -am verify} or the GPU test bundle ({@code docs/cuda.md}); skips elsewhere, printing
 * why.
 */
@Tag("gpu")
@ExtendWith(RequireCuda.class)
// PointerScope works by existing: its try block never names it.
@SuppressWarnings("try")
class CudaTrainingGpuTest {
    private static final int STEPS = 300;
    private static final int WIDTH = 512;
    private static final int INPUTS = 64;
    private static final int SAMPLES = 4096;
    private static final MuonConfig MUON = MuonConfig.defaults().withLr(0.02).withNsPrecision(NsPrecision.BFLOAT16);
    /** A folder for {@code training.csv}; unset, the curves are only printed. */
    static final String OUT_PROPERTY = "muon.gpu.out";

    /** The optimizer of a run. */
    enum Kind {
        MUON_ADAMW, ADAMW
    }

    @Test
    void muonAdamW_fitsATeacherMlp_onCuda_throughTheKernels() {
        Device cuda = new Device(torch.DeviceType.CUDA, (byte) 0);
        assertTrue(new CudaOrthogonalizerProvider().create(MUON.newtonSchulz(), cuda).isPresent(),
                "the Muon group's Newton-Schulz settings must be served by the CUDA kernels");
        List<Double> losses = train(cuda, Kind.MUON_ADAMW);
        List<Double> adamW = train(cuda, Kind.ADAMW);
        double first = losses.get(0);
        double last = losses.get(STEPS - 1);
        assertTrue(losses.stream().allMatch(Double::isFinite), "non-finite loss: " + losses);
        assertTrue(adamW.stream().allMatch(Double::isFinite), "non-finite AdamW loss: " + adamW);
        System.out.printf(Locale.ROOT, "CudaTrainingGpuTest: after %d steps MuonAdamW %.5f, AdamW %.5f (start %.5f)%n",
                STEPS, last, adamW.get(STEPS - 1), first);
        assertTrue(last < 0.1 * first, "loss fell from " + first + " only to " + last);
    }

    /**
     * Trains the MLP on {@code device} with {@code kind} and returns the loss before each step; the parameters must
     * stay on the device in float32.
     */
    static List<Double> train(Device device, Kind kind) {
        try (PointerScope scope = new PointerScope()) {
            torch.manual_seed(1234);
            TensorOptions options = new TensorOptions(ScalarType.Float).device(new DeviceOptional(device));
            Tensor x = torch.randn(new long[]{SAMPLES, INPUTS}, options);
            Tensor y = forward(mlp(options, 1.0), x).detach();

            Map<String, Tensor> params = mlp(options, 0.5);
            for (Tensor p : params.values()) {
                p.requires_grad_(true);
            }
            Runnable zeroGrad;
            Runnable step;
            if (kind == Kind.MUON_ADAMW) {
                MuonAdamW opt = MuonAdamW.builder(params).muon(MUON).adamW(AdamWConfig.defaults().withLr(1e-3))
                        .build();
                System.out.println(opt.assignment());
                zeroGrad = opt::zeroGrad;
                step = opt::step;
            } else {
                AdamW opt = new AdamW(new TensorVector(params.values().toArray(new Tensor[0])), new AdamWOptions(1e-3));
                zeroGrad = opt::zero_grad;
                step = opt::step;
            }

            List<Double> losses = new ArrayList<>();
            List<String> rows = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < STEPS; i++) {
                try (PointerScope stepScope = new PointerScope()) {
                    zeroGrad.run();
                    Tensor loss = torch.mse_loss(forward(params, x), y);
                    loss.backward();
                    step.run();
                    // item_double synchronizes, so the seconds include the step's GPU work.
                    losses.add(loss.item_double());
                    double seconds = (System.nanoTime() - start) / 1e9;
                    rows.add(String.format(Locale.ROOT, "%s,%d,%.6f,%.4f", kind, i, losses.get(i), seconds));
                    if (i % 50 == 0 || i == STEPS - 1) {
                        System.out.printf(Locale.ROOT, "CudaTrainingGpuTest: %-10s step %3d  loss %.5f  %.2f s%n",
                                kind, i, losses.get(i), seconds);
                    }
                }
            }
            appendCsv(rows);
            for (Map.Entry<String, Tensor> e : params.entrySet()) {
                // JavaCPP enum returns are compared by value: they need not be the same constant.
                assertTrue(e.getValue().device().type().value == device.type().value
                        && e.getValue().scalar_type().value == ScalarType.Float.value,
                        e.getKey() + " left " + device.str().getString() + " or float32");
            }
            return losses;
        }
    }

    private static void appendCsv(List<String> rows) {
        String dir = System.getProperty(OUT_PROPERTY);
        if (dir == null) {
            return;
        }
        try {
            Path csv = Files.createDirectories(Path.of(dir)).resolve("training.csv");
            if (!Files.exists(csv)) {
                Files.writeString(csv, "optimizer,step,loss,seconds\n", StandardCharsets.UTF_8);
            }
            Files.write(csv, rows, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Three hidden layers and a head; the hidden weights go to Muon, biases and the head to AdamW. */
    private static Map<String, Tensor> mlp(TensorOptions options, double gain) {
        Map<String, Tensor> p = new LinkedHashMap<>();
        int in = INPUTS;
        for (int i = 0; i < 3; i++) {
            p.put("layers." + i + ".weight",
                    torch.randn(new long[]{WIDTH, in}, options).mul(new Scalar(gain / Math.sqrt(in))));
            p.put("layers." + i + ".bias", torch.zeros(new long[]{WIDTH}, options));
            in = WIDTH;
        }
        p.put("head.weight", torch.randn(new long[]{1, WIDTH}, options).mul(new Scalar(gain / Math.sqrt(WIDTH))));
        return p;
    }

    private static Tensor forward(Map<String, Tensor> p, Tensor x) {
        Tensor h = x;
        for (int i = 0; i < 3; i++) {
            h = torch.linear(h, p.get("layers." + i + ".weight"), p.get("layers." + i + ".bias")).relu();
        }
        return h.matmul(p.get("head.weight").t());
    }
}
