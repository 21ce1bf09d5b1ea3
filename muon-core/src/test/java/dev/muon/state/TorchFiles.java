package dev.muon.state;

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

    /** A tree as the bytes of a {@code torch.save} file. */
    public static byte[] bytes(Object root) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try {
            TorchSave.write(root, out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    /** A Python tuple of these items, as the files hold one (the state package's pickle value). */
    public static Object tuple(Object... items) {
        return PickleValues.Tuple.of(items);
    }

    /** A JSON text parsed as the checkpoint reader parses it. */
    public static Object parseJson(String text) {
        return Json.parse(text, "test");
    }

    /** A value as the checkpoint writer writes it in JSON. */
    public static String writeJson(Object value) {
        return Json.write(value);
    }

    /** The metadata key of a checkpoint's SHA-256. */
    public static final String DIGEST_KEY = Safetensors.DIGEST_KEY;
}
