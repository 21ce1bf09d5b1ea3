package dev.muon;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * 2,000 training steps of a small MLP must not grow the process's resident memory: a leak of one parameter-sized
 * tensor (128 KiB) per step would add ~230 MiB, against a bound of 48 MiB for allocator and JIT noise. The same
 * holds for 2,000 steps through a same-shape batch.
 */
class NativeMemoryTest {
    private static final Path STATUS = Path.of("/proc/self/status");

    static long residentKib() throws IOException {
        for (String line : Files.readAllLines(STATUS)) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IllegalStateException("no VmRSS in " + STATUS);
    }

    @Test
    void twoThousandSteps_keepResidentMemoryFlat() throws IOException {
        assumeTrue(Files.isReadable(STATUS), "RSS is read from /proc/self/status, which this OS lacks");
        torch.manual_seed(3);
        try (PointerScope outer = new PointerScope()) {
            Tensor w1 = torch.randn(256, 128).mul_(new org.bytedeco.pytorch.Scalar(0.05)).requires_grad_(true);
            Tensor w2 = torch.randn(128, 256).mul_(new org.bytedeco.pytorch.Scalar(0.05)).requires_grad_(true);
            Tensor x = torch.randn(64, 128);
            Muon muon = Muon.of(List.of(w1, w2), MuonConfig.defaults().withLr(0.01));
            long growthKib = residentGrowthKib(muon, step -> {
                muon.zeroGrad();
                Tensor h = x.matmul(w1.t()).relu();
                Tensor loss = h.matmul(w2.t()).sub(x).pow(new org.bytedeco.pytorch.Scalar(2)).mean();
                loss.backward();
            });
            System.out.println("NativeMemoryTest: RSS growth over steps 200..2000 = " + growthKib + " KiB");
            assertTrue(growthKib < 48 * 1024, "RSS grew by " + growthKib + " KiB over 1,800 steps");
        }
    }

    @Test
    void twoThousandSameShapeBatchedSteps_keepResidentMemoryFlat() throws IOException {
        // 8 matrices of 16x512 (32 KiB each) in one same-shape batch; every third step one has no gradient, so
        // the stack is also used narrowed. Wide and short, so that the steps are cheap and a leak of one
        // parameter-sized tensor per step (~56 MiB) still shows.
        assumeTrue(Files.isReadable(STATUS), "RSS is read from /proc/self/status, which this OS lacks");
        torch.manual_seed(5);
        try (PointerScope outer = new PointerScope()) {
            List<Tensor> params = new java.util.ArrayList<>();
            List<Tensor> grads = new java.util.ArrayList<>();
            for (int i = 0; i < 8; i++) {
                params.add(torch.randn(16, 512).requires_grad_(true));
                grads.add(torch.randn(16, 512));
            }
            Muon muon = Muon.of(params, MuonConfig.defaults().withLr(0.01));
            assertTrue(muon.sameShapeBatches(0).size() == 1, "the eight matrices form one batch");
            long growthKib = residentGrowthKib(muon, step -> {
                for (int i = 0; i < params.size(); i++) {
                    boolean missing = step % 3 == 0 && i == step % 8;
                    params.get(i).mutable_grad().put(missing ? new Tensor() : grads.get(i));
                }
            });
            System.out.println("NativeMemoryTest: batched RSS growth over steps 200..2000 = " + growthKib + " KiB");
            assertTrue(growthKib < 48 * 1024, "RSS grew by " + growthKib + " KiB over 1,800 steps");
        }
    }

    /**
     * Runs 2,000 steps, each after {@code prepare} (in a scope of its own), and returns the growth of the resident
     * memory between step 200 and the end, in KiB. {@code step()} runs outside that scope on purpose: whatever it
     * leaves unscoped piles up in the caller's scope until the end of the test, and shows in the RSS.
     */
    private static long residentGrowthKib(Muon muon, java.util.function.IntConsumer prepare) throws IOException {
        long baseline = 0;
        for (int step = 0; step < 2000; step++) {
            try (PointerScope inner = new PointerScope()) {
                prepare.accept(step);
            }
            muon.step();
            if (step == 200) {
                System.gc();
                baseline = residentKib();
            }
        }
        System.gc();
        return residentKib() - baseline;
    }
}
