package dev.muon.state;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The {@code torch.save} writer is deterministic: one state gives the same bytes whenever it is written, because
 * every zip entry carries a fixed time rather than the clock's (which the zip keeps in 2-second steps, so two
 * exports straddling a boundary differed at byte 10, the first local header's time). Reading takes any time.
 */
@ExtendWith(NativeScopePerTest.class)
class TorchSaveTest {
    /** Written out rather than taken from {@code TorchSave}, so that a change of the constant is a decision. */
    private static final LocalDateTime FIXED = LocalDateTime.of(1980, 2, 1, 0, 0);

    @TempDir
    Path dir;

    private static Map<String, Object> tree() {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("step", 3L);
        root.put("t", torch.arange(new Scalar(6)).to(torch.ScalarType.Float).reshape(2, 3));
        return root;
    }

    @Test
    void everyEntry_carriesTheFixedTime_inItsLocalHeaderAndTheDirectory() throws IOException {
        Path file = dir.resolve("a.pt");
        TorchFiles.write(file, tree());
        List<String> names = new ArrayList<>();
        try (ZipInputStream in = new ZipInputStream(Files.newInputStream(file))) {
            for (ZipEntry e; (e = in.getNextEntry()) != null; ) {
                names.add(e.getName());
                assertEquals(FIXED, e.getTimeLocal(), e.getName() + "'s local header time");
                assertNull(e.getExtra(), e.getName() + " carries an extra field (an extended timestamp?)");
            }
        }
        assertEquals(List.of("archive/data.pkl", "archive/byteorder", "archive/data/0", "archive/version"), names);
        try (ZipFile zip = new ZipFile(file.toFile())) {
            zip.stream().forEach(e -> assertEquals(FIXED, e.getTimeLocal(), e.getName() + "'s directory time"));
        }
    }

    @Test
    void theSameState_writtenAcrossATwoSecondBoundary_givesTheSameBytes() throws Exception {
        Map<String, Object> root = tree();
        Path first = dir.resolve("first.pt");
        Path second = dir.resolve("second.pt");
        TorchFiles.write(first, root);
        // A zip time has 2-second steps: wait into the next one, so that a stamped clock would show.
        long step = System.currentTimeMillis() / 2000;
        while (System.currentTimeMillis() / 2000 == step) {
            Thread.sleep(20);
        }
        TorchFiles.write(second, root);
        assertArrayEquals(Files.readAllBytes(first), Files.readAllBytes(second), "the two writes differ");
    }

    @Test
    void aFileStampedWithAnyTime_stillReads() throws IOException {
        Path written = dir.resolve("written.pt");
        TorchFiles.write(written, tree());
        Path stamped = restamped(written, dir.resolve("stamped.pt"), LocalDateTime.of(2024, 5, 17, 13, 37, 42));
        try (ZipFile zip = new ZipFile(stamped.toFile())) {
            assertFalse(zip.stream().anyMatch(e -> FIXED.equals(e.getTimeLocal())), "the copy kept the fixed time");
        }
        Map<?, ?> read = (Map<?, ?>) TorchFiles.read(stamped);
        assertEquals(3L, read.get("step"));
        assertTrue(((Tensor) read.get("t")).equal((Tensor) tree().get("t")), "the tensor read back");
    }

    /** A copy of {@code from} whose every entry has {@code time}, its records as they were (uncompressed). */
    private static Path restamped(Path from, Path to, LocalDateTime time) throws IOException {
        try (ZipInputStream in = new ZipInputStream(Files.newInputStream(from));
             OutputStream file = Files.newOutputStream(to);
             ZipOutputStream out = new ZipOutputStream(file)) {
            for (ZipEntry e; (e = in.getNextEntry()) != null; ) {
                byte[] data = in.readAllBytes();
                ZipEntry copy = PickleBytes.storedEntry(e.getName(), data);
                copy.setTimeLocal(time);
                out.putNextEntry(copy);
                out.write(data);
                out.closeEntry();
            }
        }
        return to;
    }
}
