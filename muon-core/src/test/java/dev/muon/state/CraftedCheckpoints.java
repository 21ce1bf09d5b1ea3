package dev.muon.state;

import org.bytedeco.pytorch.Tensor;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
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
            Safetensors.write(channel, metadata, tensors, TensorBytes.TORCH);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    /**
     * A copy of a good checkpoint whose header gives {@code tensor} another shape and {@code dataBytes} bytes of
     * data, with the state document edited: what no libtorch tensor could be written as. The tensor's bytes are a
     * hole (a sparse file: a terabyte costs no disk), the other tensors keep theirs, and the stored SHA-256 stays
     * the good file's, so it no longer matches: what is refused must be refused before the digest is computed.
     */
    @SuppressWarnings("unchecked")
    public static Path reshaped(Path good, Path out, String tensor, long[] shape, long dataBytes,
                                Consumer<Map<String, Object>> document) {
        try (FileChannel in = FileChannel.open(good, StandardOpenOption.READ);
             FileChannel channel = FileChannel.open(out, StandardOpenOption.CREATE,
                     StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            ByteBuffer length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            in.read(length, 0);
            int headerBytes = (int) length.flip().getLong();
            ByteBuffer text = ByteBuffer.allocate(headerBytes);
            in.read(text, 8);
            Map<String, Object> header = (Map<String, Object>) Json.parse(new String(text.array(),
                    StandardCharsets.UTF_8).strip(), "test");
            Map<String, Object> meta = (Map<String, Object>) header.get("__metadata__");
            Map<String, Object> doc = (Map<String, Object>) Json.parse((String) meta.get("state"), "test");
            document.accept(doc);
            meta.put("state", Json.write(doc));
            long offset = 0;
            Map<String, long[]> sources = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : header.entrySet()) {
                if (e.getKey().equals("__metadata__")) {
                    continue;
                }
                Map<String, Object> entry = (Map<String, Object>) e.getValue();
                List<Object> offsets = (List<Object>) entry.get("data_offsets");
                long begin = (Long) offsets.get(0);
                long bytes = (Long) offsets.get(1) - begin;
                if (e.getKey().equals(tensor)) {
                    List<Object> sizes = new ArrayList<>();
                    for (long size : shape) {
                        sizes.add(size);
                    }
                    entry.put("shape", sizes);
                    bytes = dataBytes;
                    begin = -1;
                }
                sources.put(e.getKey(), new long[]{begin, offset, bytes});
                entry.put("data_offsets", List.of(offset, offset + bytes));
                offset += bytes;
            }
            byte[] json = Json.write(header).getBytes(StandardCharsets.UTF_8);
            byte[] padded = Arrays.copyOf(json, (json.length + 7) / 8 * 8);
            Arrays.fill(padded, json.length, padded.length, (byte) ' ');
            long dataStart = 8 + padded.length;
            channel.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(padded.length).flip(), 0);
            channel.write(ByteBuffer.wrap(padded), 8);
            for (long[] source : sources.values()) {
                if (source[0] >= 0 && source[2] > 0) {
                    ByteBuffer data = ByteBuffer.allocate((int) source[2]);
                    in.read(data, 8 + headerBytes + source[0]);
                    channel.write(data.flip(), dataStart + source[1]);
                }
            }
            if (offset > 0) {
                // The file's last byte, written where the data ends: whatever was not written is a hole.
                ByteBuffer last = ByteBuffer.allocate(1);
                if (channel.size() < dataStart + offset) {
                    channel.write(last, dataStart + offset - 1);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
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
            content = new LinkedHashMap<>(Safetensors.readTensors(channel, header, TensorBytes.TORCH));
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
