package dev.muon.distributed;

import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Named tensors to and from a libtorch archive: how the workers hand their parameters to the test, and how far two
 * runs' parameters lie apart.
 */
final class TensorFiles {
    private TensorFiles() {
    }

    static void write(Map<String, Tensor> tensors, Path path) {
        OutputArchive out = new OutputArchive();
        for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
            out.write(e.getKey(), e.getValue().detach().clone());
        }
        out.save_to(path.toString());
    }

    static Map<String, Tensor> read(Path path, Iterable<String> names) {
        InputArchive in = new InputArchive();
        in.load_from(path.toString());
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        for (String name : names) {
            Tensor t = new Tensor();
            in.read(name, t);
            tensors.put(name, t);
        }
        return tensors;
    }

    /** The largest absolute difference between {@code a}'s tensors and {@code b}'s of the same names. */
    static double maxAbsDiff(Map<String, Tensor> a, Map<String, Tensor> b) {
        double max = 0;
        for (String name : a.keySet()) {
            max = Math.max(max, a.get(name).sub(b.get(name)).abs().max().item_double());
        }
        return max;
    }
}
