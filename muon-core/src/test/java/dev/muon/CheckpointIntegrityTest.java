package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch.ScalarType;
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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A checkpoint survives a full disk and reports corruption: a write that fails part-way is an exception (never a
 * JVM crash) that leaves the previous file, the directory and the optimizer as they were; every byte of a file is
 * covered by a SHA-256, so a flipped bit or an edited value is refused before anything is restored.
 */
@ExtendWith(NativeScopePerTest.class)
class CheckpointIntegrityTest {
    @TempDir
    Path dir;

    private static MuonAdamW trained(Map<String, Tensor> named, int steps) {
        MuonAdamW opt = CheckpointTest.hybrid(named);
        for (int i = 0; i < steps; i++) {
            TestModels.setGradients(named, 70 + opt.stepCount());
            opt.step();
        }
        return opt;
    }

    /**
     * The disk fills up after {@code capacity} bytes of the temporary file (as a tmpfs would, without needing
     * one): the save fails with the path and the free space, and nothing changes.
     */
    @ParameterizedTest(name = "disk full after {0} bytes")
    @ValueSource(longs = {0, 64, 4096, -200, -40, -1})
    void fullDisk_failsCleanly_andChangesNothing(long capacity) throws IOException {
        Map<String, Tensor> named = CheckpointTest.small(ScalarType.Float, 5);
        MuonAdamW opt = trained(named, 2);
        Path file = dir.resolve("run.ckpt");
        opt.save(file);
        byte[] previous = Files.readAllBytes(file);
        TestModels.setGradients(named, 99);
        opt.step();
        // Negative capacities count back from the end of a complete file: the trailer's last bytes, and so on.
        long limit = capacity >= 0 ? capacity : previous.length + capacity;
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);

        UncheckedIOException e = assertThrows(UncheckedIOException.class,
                () -> Checkpoint.write(file, opt.checkpointState(), p -> new FullDisk(p, limit)));
        assertTrue(e.getMessage().startsWith("cannot save checkpoint " + file.toAbsolutePath() + ": writing "),
                e.getMessage());
        assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
        assertTrue(e.getMessage().contains(" bytes are free in " + dir.toAbsolutePath()), e.getMessage());
        assertArrayEquals(previous, Files.readAllBytes(file), "the previous checkpoint changed");
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(file), files.toList(), "a temporary file was left behind");
        }
        assertEquals(3, opt.stepCount());
        Map<String, Tensor> after = CheckpointTest.stateOf(opt);
        for (String key : before.keySet()) {
            assertTrue(before.get(key).equal(after.get(key)), key + " changed");
        }
        MuonAdamW reader = CheckpointTest.hybrid(CheckpointTest.small(ScalarType.Float, 5));
        reader.load(file);
        assertEquals(2, reader.stepCount(), "the previous checkpoint still loads");
    }

    /** 30 single-bit flips anywhere in the file: every one is refused, and the optimizer keeps its state. */
    @Test
    void everyFlippedBit_isRefused_andChangesNothing() throws IOException {
        Map<String, Tensor> named = CheckpointTest.small(ScalarType.Float, 5);
        MuonAdamW saved = trained(named, 2);
        Path good = dir.resolve("good.ckpt");
        saved.save(good);
        byte[] bytes = Files.readAllBytes(good);

        MuonAdamW target = trained(CheckpointTest.small(ScalarType.Float, 5), 1);
        Map<String, Tensor> before = CheckpointTest.stateOf(target);
        Random random = new Random(2026);
        List<String> refusals = new ArrayList<>();
        for (int k = 0; k < 30; k++) {
            int position = random.nextInt(bytes.length);
            byte[] flipped = bytes.clone();
            flipped[position] ^= (byte) (1 << random.nextInt(8));
            Path file = Files.write(dir.resolve("flip-" + k + ".ckpt"), flipped);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file),
                    "a flip at byte " + position + " of " + bytes.length + " loaded");
            String message = e.getMessage();
            boolean inTrailerMagic = position >= bytes.length - ArchiveFile.MAGIC.length;
            assertTrue(inTrailerMagic ? message.contains("its checksum trailer is missing")
                    : message.startsWith("checkpoint " + file + " is corrupt: its SHA-256 does not match"),
                    "byte " + position + ": " + message);
            refusals.add(message);
        }
        assertEquals(1, target.stepCount());
        Map<String, Tensor> after = CheckpointTest.stateOf(target);
        for (String key : before.keySet()) {
            assertTrue(before.get(key).equal(after.get(key)), key + " changed");
        }
        assertTrue(refusals.stream().anyMatch(m -> m.contains("fails its CRC-32")),
                "no refusal named a record: " + refusals);
    }

    /** The stored Muon lr edited from 0.02 to 0.03: the checksum refuses it and names the record. */
    @Test
    void editedConfigValue_isRefused_namingTheRecord() throws IOException {
        Map<String, Tensor> named = CheckpointTest.small(ScalarType.Float, 5);
        MuonAdamW saved = trained(named, 1);
        Path file = dir.resolve("edited.ckpt");
        saved.save(file);
        byte[] bytes = Files.readAllBytes(file);
        String text = new String(bytes, StandardCharsets.ISO_8859_1);
        int at = text.indexOf("lr=0.02\n");
        assertTrue(at > 0, "the config text is stored as is");
        bytes[at + 6] = '3';
        Files.write(file, bytes);

        MuonAdamW target = trained(CheckpointTest.small(ScalarType.Float, 5), 1);
        double lr = target.lr(MuonAdamW.MUON_GROUP);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertTrue(e.getMessage().startsWith("checkpoint " + file + " is corrupt") && e.getMessage().contains(
                "record '"), e.getMessage());
        assertEquals(lr, target.lr(MuonAdamW.MUON_GROUP));
    }

    /** A version-1 file has no checksum: it loads, with one warning that says so. */
    @Test
    void version1File_loadsWithOneWarning() throws Exception {
        List<LogRecord> records = new ArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger logger = Logger.getLogger(Checkpoint.class.getName());
        logger.addHandler(handler);
        try {
            Map<String, Tensor> named = CheckpointFormatV1Test.seededModel(3);
            MuonAdamW opt = CheckpointTest.hybrid(named);
            opt.load(Path.of(CheckpointFormatV1Test.class.getResource(CheckpointFormatV1Test.RESOURCE).toURI()));
            assertEquals(3, opt.stepCount());
        } finally {
            logger.removeHandler(handler);
        }
        List<LogRecord> warnings = records.stream().filter(r -> r.getLevel() == Level.WARNING).toList();
        assertEquals(1, warnings.size(), "warnings: " + warnings);
        assertTrue(warnings.get(0).getMessage().contains("is format version 1, written without a checksum"),
                warnings.get(0).getMessage());
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
}
