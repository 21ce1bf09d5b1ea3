package dev.muon.state;

import dev.muon.internal.Json;
import dev.muon.internal.Safetensors;
import org.bytedeco.pytorch.Tensor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Test tools that write checkpoints a damaged, hand-edited or foreign writer could: any metadata and tensors in the
 * safetensors layout, with a valid SHA-256, so that what is refused is the content, not the checksum.
 */
public final class CraftedCheckpoints {
    private CraftedCheckpoints() {
    }

    /** A safetensors file of the given metadata and tensors (muon-core's digest added). */
    public static Path safetensors(Path file, Map<String, String> metadata, Map<String, Tensor> tensors) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            Safetensors.write(channel, metadata, tensors);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    /** A copy of a good checkpoint with its metadata and state document edited. */
    public static Path edited(Path good, Path out, Consumer<Map<String, String>> metadata,
                              Consumer<Map<String, Object>> document) {
        return edited(good, out, metadata, document, tensors -> { });
    }

    /** A copy of a good checkpoint with its metadata, state document and tensors edited. */
    @SuppressWarnings("unchecked")
    public static Path edited(Path good, Path out, Consumer<Map<String, String>> metadata,
                              Consumer<Map<String, Object>> document, Consumer<Map<String, Tensor>> tensors) {
        Map<String, String> meta;
        Map<String, Tensor> content;
        try (FileChannel channel = FileChannel.open(good, StandardOpenOption.READ)) {
            Safetensors.Header header = Safetensors.readHeader(channel);
            meta = new LinkedHashMap<>(header.metadata());
            content = new LinkedHashMap<>(Safetensors.readTensors(channel, header));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        meta.remove(Safetensors.DIGEST_KEY);
        Map<String, Object> doc = (Map<String, Object>) Json.parse(meta.get("state"), "test");
        document.accept(doc);
        meta.put("state", Json.write(doc));
        metadata.accept(meta);
        tensors.accept(content);
        return safetensors(out, meta, content);
    }
}
