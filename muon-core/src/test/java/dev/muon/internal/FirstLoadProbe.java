package dev.muon.internal;

import dev.muon.MuonConfig;
import dev.muon.orthogonalize.NewtonSchulz;
import dev.muon.orthogonalize.NewtonSchulzConfig;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A fresh JVM that touches one of our types first, then prints every mapped {@code libtorch_cpu} file of its own
 * process as {@code mapped=<path>}. {@link TorchNativesTest} starts it on an empty JavaCPP cache. With the argument
 * {@code newton-schulz} our code loads libtorch (it orthogonalizes a small matrix); with {@code config-then-model}
 * the program only makes a {@code MuonConfig}, then loads libtorch itself by building a layer, as a program that
 * reads its settings before it builds its model does.
 */
final class FirstLoadProbe {
    private FirstLoadProbe() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 1 && args[0].equals("config-then-model")) {
            MuonConfig config = MuonConfig.defaults().withLr(0.02);
            LinearImpl layer = new LinearImpl(4, 8);
            System.out.println("lr=" + config.lr() + " weight=" + layer.weight().size(0));
        } else if (args.length == 1 && args[0].equals("newton-schulz")) {
            NewtonSchulz ns = new NewtonSchulz(NewtonSchulzConfig.defaults());
            torch.manual_seed(1);
            Tensor o = ns.orthogonalize(torch.randn(8, 4));
            System.out.println("norm=" + o.norm().item_double());
        } else {
            throw new IllegalArgumentException("the argument must be newton-schulz or config-then-model, got "
                    + java.util.Arrays.toString(args));
        }
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"), StandardCharsets.UTF_8)) {
            int path = line.indexOf('/');
            if (path >= 0 && line.contains("libtorch_cpu")) {
                System.out.println("mapped=" + line.substring(path));
            }
        }
    }
}
