package dev.muon.internal;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The first JVM on an empty JavaCPP cache maps exactly one {@code libtorch_cpu}, the cache's, even where a
 * system-wide libtorch is installed (Debian's {@code python3-torch}, as on this project's machines): without
 * {@link TorchNatives} that JVM dies with a SIGSEGV (issue 18, item 12).
 */
class TorchNativesTest {
    /** Generous: extracting the 330 MB libtorch_cpu from its jar takes a few seconds, more on a busy machine. */
    private static final int LIMIT_SECONDS = 180;

    @TempDir
    Path dir;

    /**
     * The cache holds symbolic links to CUDA libraries outside it (JavaCPP links what it finds on the system); JUnit
     * warns on the console for each such link it deletes, so the cache goes here, links deleted as links.
     */
    @AfterEach
    void deleteCache() throws IOException {
        Path cache = dir.resolve("javacpp-cache");
        if (Files.exists(cache, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            try (Stream<Path> files = Files.walk(cache)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }

    @Test
    void nativeFiles_includeLibtorchCpu() throws IOException {
        assertTrue(TorchNatives.extract(), "the natives are in this JVM's cache");
        List<URL> files = TorchNatives.nativeFiles(TorchNatives.class.getClassLoader());
        String torchCpu = "/" + System.mapLibraryName("torch_cpu");
        assertTrue(files.stream().anyMatch(u -> u.toString().endsWith(torchCpu)),
                "the preset's files hold " + torchCpu + ": " + files);
    }

    /**
     * Each row a program that touches one of our types first: one in which our code loads libtorch, and one that
     * only makes a config before loading libtorch itself (that one crashed before issue 30).
     */
    @ParameterizedTest
    @ValueSource(strings = {"newton-schulz", "config-then-model"})
    void firstJvmOnEmptyCache_mapsOnlyTheCachedLibtorchCpu(String program) throws Exception {
        assumeTrue(Files.isReadable(Path.of("/proc/self/maps")),
                "reads the process's mappings from /proc/self/maps, which only Linux has");
        Path cache = Files.createDirectories(dir.resolve("javacpp-cache"));
        Path log = dir.resolve("probe.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(java, "-Xmx512m",
                "-Dorg.bytedeco.javacpp.cachedir=" + cache,
                // A crash is the failure this test exists for: keep its report out of the module folder.
                "-XX:ErrorFile=" + dir.resolve("hs_err_pid%p.log"),
                "-cp", System.getProperty("java.class.path"), FirstLoadProbe.class.getName(), program);
        builder.environment().put("OMP_NUM_THREADS", "1");
        builder.redirectErrorStream(true);
        builder.redirectOutput(log.toFile());
        long start = System.nanoTime();
        Process probe = builder.start();
        if (!probe.waitFor(LIMIT_SECONDS, TimeUnit.SECONDS)) {
            probe.destroyForcibly().waitFor();
            fail("the probe did not finish in " + LIMIT_SECONDS + " s:\n" + Files.readString(log));
        }
        long seconds = (System.nanoTime() - start) / 1_000_000_000;
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(0, probe.exitValue(), "the probe failed (exit " + probe.exitValue() + ", "
                + Files.exists(Path.of("/lib/x86_64-linux-gnu/libtorch_cpu.so")) + " for a system libtorch), after "
                + seconds + " s:\n" + output);
        Set<String> mapped = new TreeSet<>();
        for (String line : output.split("\n")) {
            if (line.startsWith("mapped=")) {
                mapped.add(line.substring("mapped=".length()).trim());
            }
        }
        assertEquals(1, mapped.size(), "exactly one libtorch_cpu is mapped: " + mapped);
        String only = mapped.iterator().next();
        assertTrue(Path.of(only).startsWith(cache.toRealPath()), only + " lies in the cache " + cache);
    }
}
