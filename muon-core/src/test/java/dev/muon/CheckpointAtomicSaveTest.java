package dev.muon;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kills a child JVM ({@link CheckpointSaveLoop}) while it is in the middle of a save, and checks that the
 * checkpoint it had saved before is intact: it loads, and it is one of the complete saves.
 */
class CheckpointAtomicSaveTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void killDuringSave_leavesThePreviousFileIntact() throws Exception {
        Path file = dir.resolve("run.ckpt");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                CheckpointSaveLoop.class.getName(), file.toString());
        builder.redirectErrorStream(true);
        Process child = builder.start();
        AtomicLong lastSaved = new AtomicLong(-1);
        CountDownLatch firstSave = new CountDownLatch(1);
        StringBuilder output = new StringBuilder();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(child.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    synchronized (output) {
                        output.append(line).append('\n');
                    }
                    if (line.startsWith("saved ")) {
                        lastSaved.set(Long.parseLong(line.substring(6).trim()));
                        firstSave.countDown();
                    }
                }
            } catch (IOException ignored) {
                // the child was killed
            }
        });
        reader.setDaemon(true);
        reader.start();
        boolean sawTemporaryFile = false;
        long savedBeforeKill;
        try {
            long start = System.nanoTime();
            while (!firstSave.await(1, TimeUnit.SECONDS)) {
                assertTrue(child.isAlive() && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(180),
                        "the child never saved; its output:\n" + output);
            }
            // Wait for a save to be under way (its temporary file exists), then kill the child at once.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline && !(sawTemporaryFile = temporaryFileExists())) {
                Thread.onSpinWait();
            }
            savedBeforeKill = lastSaved.get();
            child.destroyForcibly();
            assertTrue(child.waitFor(60, TimeUnit.SECONDS), "the child did not die");
        } finally {
            child.destroyForcibly();
        }
        reader.join(TimeUnit.SECONDS.toMillis(10));
        assertTrue(sawTemporaryFile, "no save was seen in progress; child output:\n" + output);

        MuonAdamW opt = CheckpointSaveLoop.optimizer(CheckpointSaveLoop.model());
        opt.load(file);
        // The file is the save that had completed before the kill, or the one in progress if its rename
        // completed just before the kill landed; never a partial one.
        long step = opt.stepCount();
        assertTrue(step == savedBeforeKill || step == savedBeforeKill + 1,
                "loaded step " + step + ", last completed save before the kill " + savedBeforeKill);
    }

    private boolean temporaryFileExists() {
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(p -> p.getFileName().toString().startsWith(".run.ckpt.tmp-"));
        } catch (IOException e) {
            return false;
        }
    }
}
