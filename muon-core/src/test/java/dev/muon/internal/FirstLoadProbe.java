package dev.muon.internal;

import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A fresh JVM whose first touch of libtorch is through our library: it orthogonalizes a small matrix, then prints
 * every mapped {@code libtorch_cpu} file of its own process as {@code mapped=<path>}. {@link TorchNativesTest}
 * starts it on an empty JavaCPP cache.
 */
final class FirstLoadProbe {
    private FirstLoadProbe() {
    }

    public static void main(String[] args) throws IOException {
        NewtonSchulz ns = new NewtonSchulz(NewtonSchulzConfig.defaults());
        torch.manual_seed(1);
        Tensor o = ns.orthogonalize(torch.randn(8, 4));
        System.out.println("norm=" + o.norm().item_double());
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"), StandardCharsets.UTF_8)) {
            int path = line.indexOf('/');
            if (path >= 0 && line.contains("libtorch_cpu")) {
                System.out.println("mapped=" + line.substring(path));
            }
        }
    }
}
