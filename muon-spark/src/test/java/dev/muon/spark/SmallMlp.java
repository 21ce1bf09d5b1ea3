package dev.muon.spark;

import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.util.List;

/** The docs' model: {@code 8 → 32 → 32 → 4}, ReLU, over {@link Sample}s. */
final class SmallMlp extends Module {
    private final LinearImpl fc1;
    private final LinearImpl fc2;
    private final LinearImpl head;

    private SmallMlp() {
        fc1 = register_module("fc1", new LinearImpl(Sample.FEATURES, 32));
        fc2 = register_module("fc2", new LinearImpl(32, 32));
        head = register_module("head", new LinearImpl(32, Sample.CLASSES));
    }

    /**
     * The model's initial weights from {@code seed}. Locked: in local mode the ranks are threads of one JVM sharing
     * libtorch's default generator, and two ranks drawing from it at once would start from different weights.
     */
    static SmallMlp seeded(long seed) {
        synchronized (SmallMlp.class) {
            torch.manual_seed(seed);
            return new SmallMlp();
        }
    }

    /** The mean cross-entropy of {@code n} rows of {@code rows} from {@code from} on (wrapping round). */
    Tensor loss(List<Sample> rows, long from, int n) {
        float[] x = new float[n * Sample.FEATURES];
        long[] y = new long[n];
        for (int i = 0; i < n; i++) {
            Sample s = rows.get((int) ((from + i) % rows.size()));
            System.arraycopy(s.x(), 0, x, i * Sample.FEATURES, Sample.FEATURES);
            y[i] = s.label();
        }
        Tensor h = torch.relu(fc2.forward(torch.relu(fc1.forward(Tensor.create(x, n, Sample.FEATURES)))));
        return torch.cross_entropy(head.forward(h), Tensor.create(y, n));
    }
}
