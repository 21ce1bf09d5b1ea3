package dev.muon.state;

import dev.muon.AdamWConfig;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The checkpoint codec on its own: a state comes back equal, a full disk fails cleanly and leaves the previous
 * file, and a changed byte anywhere, or an edited value, is refused.
 */
@ExtendWith(NativeScopePerTest.class)
class CheckpointFileTest {
    @TempDir
    Path dir;

    private static MuonAdamW trained(int steps) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("embed.weight", torch.randn(10, 4).requires_grad_(true));
        named.put("fc1.weight", torch.randn(5, 4).requires_grad_(true));
        named.put("fc1.bias", torch.randn(5).requires_grad_(true));
        MuonAdamW opt = MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(0.02))
                .adamW(AdamWConfig.defaults().withLr(3e-3)).build();
        for (int i = 0; i < steps; i++) {
            for (Tensor t : named.values()) {
                t.mutable_grad().put(torch.randn(t.shape()));
            }
            opt.step();
        }
        return opt;
    }

    @Test
    void state_roundTrips_everyFieldAndTensor() {
        OptimizerState state = trained(2).state();
        Path file = dir.resolve("s.ckpt");
        CheckpointFile.write(file, state);
        OptimizerState back = CheckpointFile.read(file);
        assertEquals(state.step(), back.step());
        assertEquals(state.muonConfigs(), back.muonConfigs());
        assertEquals(state.adamWConfig(), back.adamWConfig());
        assertEquals(state.schedule(), back.schedule());
        assertEquals(state.specs(), back.specs());
        for (int i = 0; i < state.entries().size(); i++) {
            ParameterEntry a = state.entries().get(i);
            ParameterEntry b = back.entries().get(i);
            same(a.value(), b.value());
            assertEquals(a.buffers().keySet(), b.buffers().keySet());
            for (String key : a.buffers().keySet()) {
                same(a.buffer(key), b.buffer(key));
            }
            assertEquals(a.adamW() == null, b.adamW() == null);
            if (a.adamW() != null) {
                same(a.adamW().expAvg(), b.adamW().expAvg());
                same(a.adamW().expAvgSq(), b.adamW().expAvgSq());
                assertEquals(a.adamW().step(), b.adamW().step());
            }
        }
    }

    private static void same(Tensor a, Tensor b) {
        assertEquals(a == null, b == null);
        if (a != null) {
            assertArrayEquals(a.shape(), b.shape());
            assertTrue(a.equal(b));
        }
    }

    /**
     * The disk fills up after {@code capacity} bytes of the temporary file (negative: counted back from the end of
     * a complete file): the save fails with the path and the free space, and nothing changes.
     */
    @ParameterizedTest(name = "disk full after {0} bytes")
    @ValueSource(longs = {0, 8, 64, 1024, -200, -1})
    void fullDisk_failsCleanly_andLeavesThePreviousFile(long capacity) throws IOException {
        OptimizerState first = trained(1).state();
        Path file = dir.resolve("run.ckpt");
        CheckpointFile.write(file, first);
        byte[] previous = Files.readAllBytes(file);
        OptimizerState second = trained(2).state();
        long limit = capacity >= 0 ? capacity : previous.length + capacity;

        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> CheckpointFile.write(file, second, p -> new FullDisk(p, limit)));
        assertTrue(e.getMessage().startsWith("cannot save checkpoint " + file.toAbsolutePath() + ": writing "),
                e.getMessage());
        assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
        assertTrue(e.getMessage().contains(" bytes are free in " + dir.toAbsolutePath()), e.getMessage());
        assertArrayEquals(previous, Files.readAllBytes(file), "the previous checkpoint changed");
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(file), files.toList(), "a temporary file was left behind");
        }
        assertEquals(1, CheckpointFile.read(file).step(), "the previous checkpoint still loads");
    }

    @Test
    void everyChangedByte_isRefused() throws IOException {
        Path good = dir.resolve("good.ckpt");
        CheckpointFile.write(good, trained(1).state());
        byte[] bytes = Files.readAllBytes(good);
        for (int position = 0; position < bytes.length; position++) {
            byte[] flipped = bytes.clone();
            flipped[position] ^= (byte) (1 << (position % 8));
            Path file = Files.write(dir.resolve("flipped.ckpt"), flipped);
            int at = position;
            StateFileException e = assertThrows(StateFileException.class, () -> CheckpointFile.read(file),
                    () -> "a flip at byte " + at + " of " + bytes.length + " was read");
            assertEquals(file, e.file());
        }
    }

    @Test
    void editedLr_isRefused_asCorrupt() throws IOException {
        Path file = dir.resolve("edited.ckpt");
        CheckpointFile.write(file, trained(1).state());
        byte[] bytes = Files.readAllBytes(file);
        String text = new String(bytes, StandardCharsets.ISO_8859_1);
        int at = text.indexOf("\\\"lr\\\":0.02,");
        assertTrue(at > 0, "the config is stored as typed JSON");
        bytes[at + "\\\"lr\\\":0.0".length()] = '3';
        Files.write(file, bytes);
        StateFileException e = assertThrows(StateFileException.class, () -> CheckpointFile.read(file));
        assertTrue(e.getMessage().contains("the file does not match its SHA-256"), e.getMessage());
    }

    /** A file channel on a disk that is full after {@code capacity} bytes. */
    private static final class FullDisk implements SeekableByteChannel {
        private final FileChannel file;
        private final long capacity;

        FullDisk(Path path, long capacity) throws IOException {
            this.file = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            this.capacity = capacity;
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            long room = capacity - file.position();
            if (room <= 0) {
                throw new IOException("No space left on device");
            }
            if (src.remaining() > room) {
                ByteBuffer part = src.duplicate();
                part.limit(part.position() + (int) room);
                int n = file.write(part);
                src.position(src.position() + n);
                return n;
            }
            return file.write(src);
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            return file.read(dst);
        }

        @Override
        public long position() throws IOException {
            return file.position();
        }

        @Override
        public SeekableByteChannel position(long newPosition) throws IOException {
            file.position(newPosition);
            return this;
        }

        @Override
        public long size() throws IOException {
            return file.size();
        }

        @Override
        public SeekableByteChannel truncate(long size) throws IOException {
            file.truncate(size);
            return this;
        }

        @Override
        public boolean isOpen() {
            return file.isOpen();
        }

        @Override
        public void close() throws IOException {
            file.close();
        }
    }

    /** The test seam is the production writer's: a channel that fails its first write fails the save. */
    @Test
    void opener_isTheOneAtomicFileUses() {
        AtomicFile.Opener failing = p -> {
            throw new IOException("read-only file system");
        };
        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> CheckpointFile.write(dir.resolve("x.ckpt"), trained(0).state(), failing));
        assertTrue(e.getMessage().contains("(read-only file system)"), e.getMessage());
    }
}
