package dev.muon.state;

import dev.muon.internal.PickleValues;
import dev.muon.internal.TorchLoad;
import dev.muon.internal.TorchSave;
import org.bytedeco.pytorch.Tensor;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Test tools for {@code torch.save} files: the tree a file holds, with its tensors read (mutable maps and lists, to
 * edit), and a tree written back as a file; what a damaged or foreign writer could produce.
 */
public final class TorchFiles {
    private TorchFiles() {
    }

    /** The tree of a file, with mutable maps and lists and its tensors as libtorch tensors. */
    public static Object read(Path file) {
        try (TorchLoad load = TorchLoad.open(file)) {
            return materialize(load.root(), load);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes a tree as a {@code torch.save} file. */
    public static void write(Path file, Object root) {
        try (OutputStream out = Files.newOutputStream(file)) {
            TorchSave.write(root, out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Object materialize(Object value, TorchLoad load) throws IOException {
        if (value instanceof PickleValues.TensorRef ref) {
            return load.tensor(ref, "test");
        }
        if (value instanceof Map<?, ?> map) {
            Map<Object, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                out.put(e.getKey(), materialize(e.getValue(), load));
            }
            return out;
        }
        if (value instanceof List<?> list) {
            List<Object> out = new ArrayList<>();
            for (Object item : list) {
                out.add(materialize(item, load));
            }
            return out;
        }
        if (value instanceof PickleValues.Tuple t) {
            List<Object> out = new ArrayList<>();
            for (Object item : t.items()) {
                out.add(materialize(item, load));
            }
            return new PickleValues.Tuple(out);
        }
        return value;
    }

    /** A tensor of the tree, for assertions. */
    public static Tensor tensor(Object value) {
        return (Tensor) value;
    }
}
