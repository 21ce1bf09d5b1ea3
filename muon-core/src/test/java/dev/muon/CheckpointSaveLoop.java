package dev.muon;

import org.bytedeco.pytorch.Tensor;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/**
 * The child process of {@link CheckpointAtomicSaveTest}: trains a small deterministic model and saves a
 * checkpoint after every step, printing {@code saved N} once save N has returned, until it is killed (or after
 * two minutes, so that it cannot outlive a crashed test run).
 */
public final class CheckpointSaveLoop {
    private CheckpointSaveLoop() {
    }

    /** The model: a few MB, so that each save takes long enough to be killed in the middle of. */
    static Map<String, Tensor> model() {
        Random random = new Random(42);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("embed.weight", values(random, 1024, 256));
        named.put("hidden.weight", values(random, 512, 512));
        named.put("hidden.bias", values(random, 512));
        return named;
    }

    private static Tensor values(Random random, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        double[] data = new double[(int) n];
        for (int i = 0; i < data.length; i++) {
            data[i] = random.nextGaussian() * 0.1;
        }
        return Tensor.create(data, shape).to(org.bytedeco.pytorch.global.torch.ScalarType.Float).requires_grad_(true);
    }

    static MuonAdamW optimizer(Map<String, Tensor> named) {
        return MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(0.02)).build();
    }

    /**
     * Saves forever.
     *
     * @param args the checkpoint path
     */
    public static void main(String[] args) {
        Path file = Path.of(args[0]);
        Map<String, Tensor> named = model();
        MuonAdamW opt = optimizer(named);
        long end = System.nanoTime() + 120_000_000_000L;
        while (System.nanoTime() < end) {
            TestModels.setGradients(named, opt.stepCount());
            opt.step();
            opt.save(file);
            System.out.println("saved " + opt.stepCount());
            System.out.flush();
        }
    }
}
