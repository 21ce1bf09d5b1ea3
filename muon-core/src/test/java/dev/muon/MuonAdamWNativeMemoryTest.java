package dev.muon;

import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * 800 steps of a small model through {@link MuonAdamW} (both groups, the default non-finite check) must not grow
 * the resident memory: a leak of one 128 KiB tensor per step would add 87 MiB, against a bound of 40 MiB.
 */
class MuonAdamWNativeMemoryTest {

    @Test
    void eightHundredSteps_keepResidentMemoryFlat() throws IOException {
        assumeTrue(Files.isReadable(Path.of("/proc/self/status")), "RSS is read from /proc/self/status");
        torch.manual_seed(5);
        try (PointerScope outer = new PointerScope()) {
            Map<String, Tensor> named = new LinkedHashMap<>();
            // Muon's step is covered by NativeMemoryTest; here the large tensor is on AdamW, so that the steps
            // stay cheap and a leak in MuonAdamW's own work (checks, AdamW, zeroGrad) shows.
            named.put("hidden.weight", torch.randn(32, 128).mul_(new Scalar(0.05)).requires_grad_(true));
            named.put("hidden.bias", torch.zeros(32).requires_grad_(true));
            named.put("head.weight", torch.randn(1024, 32).mul_(new Scalar(0.05)).requires_grad_(true));
            Tensor x = torch.randn(8, 128);
            MuonAdamW opt = MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(0.01)).build();
            long baseline = 0;
            for (int step = 0; step < 800; step++) {
                try (PointerScope inner = new PointerScope()) {
                    opt.zeroGrad();
                    Tensor h = x.matmul(named.get("hidden.weight").t()).add(named.get("hidden.bias")).relu();
                    Tensor loss = h.matmul(named.get("head.weight").t()).pow(new Scalar(2)).mean();
                    loss.backward();
                }
                // Outside the inner scope on purpose: what step() leaves unscoped piles up and shows in the RSS.
                opt.step();
                if (step == 100) {
                    System.gc();
                    baseline = NativeMemoryTest.residentKib();
                }
            }
            System.gc();
            long growthKib = NativeMemoryTest.residentKib() - baseline;
            System.out.println("MuonAdamWNativeMemoryTest: RSS growth over steps 100..800 = " + growthKib + " KiB");
            assertTrue(growthKib < 40 * 1024, "RSS grew by " + growthKib + " KiB over 700 steps");
            assertTrue(opt.stepCount() == 800, "every step was applied");
        }
    }
}
