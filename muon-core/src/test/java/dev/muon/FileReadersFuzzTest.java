package dev.muon;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.muon.state.PickleBytes;
import dev.muon.state.TorchFiles;
import dev.muon.state.StateFileException;
import dev.muon.state.StateMismatchException;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;

/**
 * Fuzz tests of the two file readers through the public {@code load} and {@code importTorchStateDict}: whatever
 * the bytes, a read ends normally or with the documented {@link StateFileException} or
 * {@link StateMismatchException}; any other exception, a crash or a hang is a finding.
 *
 * <p>Each input is a {@link FuzzedDataProvider} whose last bytes choose how to make a file: raw bytes, or a valid
 * file mutated as a writer could damage it (bit flips, truncation, overwritten runs; a checkpoint's JSON header
 * edited and its digest recomputed, so that the checks behind the digest are reached; a pickle's opcodes mutated,
 * records swapped or cut; a state dict whose momentum is a crafted view or deep nesting). In the normal test run
 * Jazzer replays the seed corpus in {@code src/test/resources/dev/muon/FileReadersFuzzTestInputs}; with
 * {@code JAZZER_FUZZ=1} it fuzzes (the long run: {@code docs/reliability.md}).
 */
class FileReadersFuzzTest {
    private static final Path DIR;
    private static final byte[] CHECKPOINT;
    private static final byte[] TORCH_STATE;
    /** The optimizers every input is read into: built once, as a run's are (a read that succeeds changes them). */
    private static final MuonAdamW HYBRID;
    private static final Muon MUON;

    static {
        // One assignment table per optimizer built would flood a fuzzing run's log.
        java.util.logging.Logger.getLogger("dev.muon").setLevel(java.util.logging.Level.WARNING);
        try {
            DIR = Files.createTempDirectory("muon-fuzz");
            DIR.toFile().deleteOnExit();
            try (PointerScope scope = new PointerScope()) {
                MuonAdamW opt = optimizer();
                TestModels.setGradients(paramsOf(opt), 1);
                opt.step();
                Path ckpt = DIR.resolve("base.ckpt");
                opt.save(ckpt);
                CHECKPOINT = Files.readAllBytes(ckpt);
                Path pt = DIR.resolve("base.pt");
                opt.exportTorchStateDict(pt);
                TORCH_STATE = Files.readAllBytes(pt);
                Files.delete(ckpt);
                Files.delete(pt);
            }
            HYBRID = optimizer();
            MUON = Muon.of(List.of(torch.randn(6, 4)), MuonConfig.defaults());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A small hybrid: one Muon matrix; an embedding, a bias and the output layer on AdamW. */
    private static MuonAdamW optimizer() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        torch.manual_seed(5);
        named.put("embed.weight", torch.randn(6, 3).requires_grad_(true));
        named.put("hidden.weight", torch.randn(3, 3).requires_grad_(true));
        named.put("hidden.bias", torch.randn(3).requires_grad_(true));
        named.put("head.weight", torch.randn(4, 3).requires_grad_(true));
        return MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(0.02)).build();
    }

    private static Map<String, Tensor> paramsOf(MuonAdamW opt) {
        return CheckpointTest.paramsOf(opt);
    }

    @FuzzTest(maxDuration = "3h", maxExecutions = 1_000_000)
    void checkpoint(FuzzedDataProvider data) throws IOException {
        int mode = data.consumeInt(0, 3);
        byte[] file = switch (mode) {
            case 0 -> data.consumeRemainingAsBytes();
            case 1 -> damaged(CHECKPOINT, data);
            default -> editedHeader(data);
        };
        Path path = Files.write(DIR.resolve("input.ckpt"), file);
        try (PointerScope scope = new PointerScope()) {
            HYBRID.load(path);
        } catch (StateFileException | StateMismatchException expected) {
            // The documented refusals.
        }
    }

    @FuzzTest(maxDuration = "3h", maxExecutions = 1_000_000)
    void torchStateDict(FuzzedDataProvider data) throws IOException {
        int mode = data.consumeInt(0, 4);
        byte[] file = switch (mode) {
            case 0 -> data.consumeRemainingAsBytes();
            case 1 -> damaged(TORCH_STATE, data);
            case 2 -> mutatedPickle(data);
            case 3 -> rearrangedRecords(data);
            default -> craftedMuonFile(data);
        };
        Path path = Files.write(DIR.resolve("input.pt"), file);
        try (PointerScope scope = new PointerScope()) {
            if (mode == 4) {
                MUON.importTorchStateDict(path);
            } else {
                HYBRID.importTorchStateDict(path);
            }
        } catch (StateFileException | StateMismatchException expected) {
            // The documented refusals.
        }
    }

    /** A valid file with bits flipped, runs overwritten, and maybe cut short. */
    private static byte[] damaged(byte[] base, FuzzedDataProvider data) {
        byte[] out = base.clone();
        int edits = data.consumeInt(1, 8);
        for (int k = 0; k < edits && data.remainingBytes() > 0; k++) {
            int at = data.consumeInt(0, out.length - 1);
            if (data.consumeBoolean()) {
                out[at] ^= (byte) (1 << data.consumeInt(0, 7));
            } else {
                byte[] run = data.consumeBytes(data.consumeInt(1, 16));
                System.arraycopy(run, 0, out, at, Math.min(run.length, out.length - at));
            }
        }
        if (data.consumeBoolean()) {
            out = java.util.Arrays.copyOf(out, data.consumeInt(0, out.length));
        }
        return out;
    }

    /**
     * A valid checkpoint whose JSON header has one value replaced (a shape, an offset, a dtype, a config field, the
     * whole state document...) and its digest recomputed, so that the reader's checks behind the digest run.
     */
    @SuppressWarnings("unchecked")
    private static byte[] editedHeader(FuzzedDataProvider data) {
        ByteBuffer in = ByteBuffer.wrap(CHECKPOINT).order(ByteOrder.LITTLE_ENDIAN);
        int headerBytes = (int) in.getLong();
        Map<String, Object> header = (Map<String, Object>) TorchFiles.parseJson(new String(CHECKPOINT, 8,
                headerBytes, StandardCharsets.UTF_8).strip());
        Map<String, Object> meta = (Map<String, Object>) header.get("__metadata__");
        Map<String, Object> state = (Map<String, Object>) TorchFiles.parseJson((String) meta.get("state"));
        List<Object> targets = new ArrayList<>();
        collect(header, targets);
        collect(state, targets);
        Object target = targets.get(data.consumeInt(0, targets.size() - 1));
        Object value = switch (data.consumeInt(0, 5)) {
            case 0 -> data.consumeLong();
            case 1 -> data.consumeRegularDouble();
            case 2 -> data.consumeString(64);
            case 3 -> null;
            case 4 -> List.of(data.consumeLong(), data.consumeLong());
            default -> data.consumeBoolean();
        };
        if (target instanceof Map<?, ?> map && !map.isEmpty()) {
            List<Object> keys = new ArrayList<>(map.keySet());
            ((Map<Object, Object>) map).put(keys.get(data.consumeInt(0, keys.size() - 1)), value);
        } else if (target instanceof List<?> list && !list.isEmpty()) {
            ((List<Object>) list).set(data.consumeInt(0, list.size() - 1), value);
        }
        meta.put("state", TorchFiles.writeJson(state));
        meta.remove(TorchFiles.DIGEST_KEY);
        byte[] json = TorchFiles.writeJson(header).getBytes(StandardCharsets.UTF_8);
        byte[] rest = java.util.Arrays.copyOfRange(CHECKPOINT, 8 + headerBytes, CHECKPOINT.length);
        return withDigest(json, rest);
    }

    /** Every map and list of a JSON tree (mutable copies are made by the parser). */
    private static void collect(Object node, List<Object> out) {
        if (node instanceof Map<?, ?> map) {
            out.add(map);
            map.values().forEach(v -> collect(v, out));
        } else if (node instanceof List<?> list) {
            out.add(list);
            list.forEach(v -> collect(v, out));
        }
    }

    /** A safetensors file of this header (a digest key added and filled in as muon-core's writer does) and data. */
    @SuppressWarnings("unchecked")
    private static byte[] withDigest(byte[] json, byte[] data) {
        Map<String, Object> header = (Map<String, Object>) TorchFiles.parseJson(new String(json,
                StandardCharsets.UTF_8));
        Object meta = header.get("__metadata__");
        if (meta instanceof Map<?, ?> m) {
            ((Map<String, Object>) m).put(TorchFiles.DIGEST_KEY, "0".repeat(64));
        }
        byte[] text = TorchFiles.writeJson(header).getBytes(StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(8 + text.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(text.length).put(text).put(data);
        byte[] bytes = out.array();
        String placeholder = "\"" + TorchFiles.DIGEST_KEY + "\":\"" + "0".repeat(64) + "\"";
        int at = new String(bytes, StandardCharsets.ISO_8859_1).indexOf(placeholder);
        if (at >= 0) {
            try {
                byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(bytes);
                byte[] hex = java.util.HexFormat.of().formatHex(digest).getBytes(StandardCharsets.US_ASCII);
                System.arraycopy(hex, 0, bytes, at + placeholder.length() - 65, 64);
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
        return bytes;
    }

    /** The records of the valid export, in order. */
    private static Map<String, byte[]> records() {
        Map<String, byte[]> out = new LinkedHashMap<>();
        try (ZipInputStream zip = new ZipInputStream(new ByteArrayInputStream(TORCH_STATE))) {
            for (ZipEntry e = zip.getNextEntry(); e != null; e = zip.getNextEntry()) {
                out.put(e.getName(), zip.readAllBytes());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    private static byte[] zip(Map<String, byte[]> records) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            for (Map.Entry<String, byte[]> e : records.entrySet()) {
                ZipEntry entry = new ZipEntry(e.getKey());
                entry.setMethod(ZipEntry.STORED);
                entry.setSize(e.getValue().length);
                entry.setCompressedSize(e.getValue().length);
                java.util.zip.CRC32 crc = new java.util.zip.CRC32();
                crc.update(e.getValue());
                entry.setCrc(crc.getValue());
                zip.putNextEntry(entry);
                zip.write(e.getValue());
                zip.closeEntry();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** The valid export with its pickle's bytes mutated: opcodes replaced, inserted or removed. */
    private static byte[] mutatedPickle(FuzzedDataProvider data) {
        Map<String, byte[]> records = records();
        String name = "archive/data.pkl";
        ByteArrayOutputStream pickle = new ByteArrayOutputStream();
        byte[] base = records.get(name);
        int at = data.consumeInt(0, base.length);
        int cut = data.consumeInt(0, Math.min(32, base.length - at));
        pickle.write(base, 0, at);
        pickle.writeBytes(data.consumeBytes(data.consumeInt(0, 64)));
        pickle.write(base, at + cut, base.length - at - cut);
        records.put(name, pickle.toByteArray());
        return zip(records);
    }

    /** The valid export with two records swapped, one cut short, or one dropped. */
    private static byte[] rearrangedRecords(FuzzedDataProvider data) {
        Map<String, byte[]> records = records();
        List<String> names = new ArrayList<>(records.keySet());
        String a = names.get(data.consumeInt(0, names.size() - 1));
        String b = names.get(data.consumeInt(0, names.size() - 1));
        switch (data.consumeInt(0, 2)) {
            case 0 -> {
                byte[] t = records.get(a);
                records.put(a, records.get(b));
                records.put(b, t);
            }
            case 1 -> records.put(a, java.util.Arrays.copyOf(records.get(a), data.consumeInt(0,
                    records.get(a).length)));
            default -> records.remove(a);
        }
        return zip(records);
    }

    /**
     * A {@code torch.optim.Muon} state dict for one [6, 4] parameter whose momentum buffer is a crafted view of a
     * crafted storage, or lists nested deep.
     */
    private static byte[] craftedMuonFile(FuzzedDataProvider data) {
        long numel = data.consumeLong(-1, 1 << 20);
        long offset = data.consumeLong();
        int rank = data.consumeInt(0, 4);
        long[] size = new long[rank];
        long[] stride = new long[rank];
        for (int d = 0; d < rank; d++) {
            size[d] = data.consumeLong(-2, 1 << 30);
            stride[d] = data.consumeLong();
        }
        int nesting = data.consumeInt(0, 2000);
        int recordBytes = data.consumeInt(0, 4096);
        PickleBytes p = PickleBytes.protocol2().op('}', '(')
                .string("param_names").op(']').string("parameter 0 of group 0").op('a')
                .string("muon").op('}', '(')
                .string("state").op('}').integer(0).op('}').string("momentum_buffer");
        if (nesting > 1000) {
            for (int i = 0; i < nesting; i++) {
                p.op(']');
            }
            for (int i = 1; i < nesting; i++) {
                p.op('a');
            }
        } else {
            p.tensor(data.consumeBoolean() ? "FloatStorage" : "DoubleStorage", "0", numel, offset, size, stride);
        }
        p.op('s', 's').string("param_groups").op(']', '}', '(')
                .string("lr").number(1e-3).string("weight_decay").number(0.1).string("momentum").number(0.95)
                .string("nesterov").op(0x88)
                .string("ns_coefficients").op('(').number(3.4445).number(-4.775).number(2.0315).op('t')
                .string("eps").number(1e-7).string("ns_steps").integer(5).string("adjust_lr_fn").string("original")
                .string("params").op(']').integer(0).op('a', 'u', 'a', 'u', 'u');
        Map<String, byte[]> records = new LinkedHashMap<>();
        records.put("archive/data.pkl", p.stop());
        records.put("archive/data/0", new byte[recordBytes]);
        return zip(records);
    }
}
