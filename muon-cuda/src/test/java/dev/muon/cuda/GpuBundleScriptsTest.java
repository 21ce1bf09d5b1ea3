package dev.muon.cuda;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The GPU test bundle's shell scripts without a GPU (and without building the bundle): {@code run.sh libs} finds the
 * CUDA libraries in a CUDA install or a Python's {@code site-packages/nvidia/<package>/lib} layout, says which
 * directory served each, and lists every missing one in one message with exit status 3, before any JVM could crash
 * on them; {@code join.sh} refuses a damaged or missing part and joins good ones into the original archive.
 */
class GpuBundleScriptsTest {
    private static final Path SCRIPTS = Path.of(System.getProperty("basedir", "."), "src", "test", "gpu");
    private static final String LIBS = String.join("\n",
            "# as bundle.sh writes it",
            "required libcublas.so.13",
            "required libcudnn.so.9",
            "required libnccl.so.2",
            "driver libcuda.so.1",
            "optional libnvrtc.so.13",
            "");

    /** One run of a script: its exit status and everything it printed. */
    record Result(int status, String output) {
    }

    @BeforeAll
    static void requireBash() {
        assumeTrue(Files.isExecutable(Path.of("/bin/bash")), "the bundle's scripts need bash");
    }

    /** A bundle directory holding run.sh and the list of libraries, as bundle.sh lays it out. */
    private static Path bundle(Path dir) throws IOException {
        Path bundle = Files.createDirectories(dir.resolve("bundle"));
        Files.copy(SCRIPTS.resolve("run.sh"), bundle.resolve("run.sh"));
        Files.writeString(bundle.resolve("cuda-libs.txt"), LIBS);
        return bundle;
    }

    private static Path fakeLibrary(Path dir, String soname) throws IOException {
        Files.createDirectories(dir);
        return Files.writeString(dir.resolve(soname), "not an ELF file; only its name is looked up");
    }

    private static Result run(Path dir, Map<String, String> env, String... command)
            throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(List.of("/bin/bash"));
        argv.addAll(List.of(command));
        ProcessBuilder pb = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().remove("MUON_CUDA_LIB_PATH");
        pb.environment().remove("MUON_SITE_PACKAGES");
        pb.environment().remove("LD_LIBRARY_PATH");
        pb.environment().put("MUON_CUDA_LIB_SEARCH", "explicit");
        pb.environment().putAll(env);
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "script did not finish");
        String text = new String(out, StandardCharsets.UTF_8);
        System.out.println(text);
        return new Result(p.exitValue(), text);
    }

    /** The line run.sh prints for a library: its name, kind and where it was found (or MISSING). */
    private static String lineOf(String output, String soname) {
        return output.lines().filter(l -> l.trim().startsWith(soname + " ")).findFirst().orElse("");
    }

    @Test
    void libs_allPresent_namesTheDirectoryThatServedEach_andPutsThemOnTheLibraryPath(@TempDir Path dir)
            throws Exception {
        Path bundle = bundle(dir);
        Path cudaLib = dir.resolve("cuda-13/lib64");
        Path sitePackages = dir.resolve("venv/lib/python3.12/site-packages");
        Path wheelCublas = sitePackages.resolve("nvidia/cu13/lib");
        Path wheelCudnn = sitePackages.resolve("nvidia/cudnn/lib");
        Path driver = dir.resolve("driver");
        fakeLibrary(wheelCublas, "libcublas.so.13");
        fakeLibrary(wheelCudnn, "libcudnn.so.9");
        fakeLibrary(cudaLib, "libnccl.so.2");
        fakeLibrary(cudaLib, "libnvrtc.so.13");
        fakeLibrary(driver, "libcuda.so.1");

        Result r = run(dir, Map.of("MUON_CUDA_LIB_PATH", cudaLib + ":" + driver,
                "MUON_SITE_PACKAGES", sitePackages.toString()), bundle.resolve("run.sh").toString(), "libs");

        assertEquals(0, r.status(), r.output());
        assertTrue(lineOf(r.output(), "libcublas.so.13").endsWith("<- " + wheelCublas), r.output());
        assertTrue(lineOf(r.output(), "libcudnn.so.9").endsWith("<- " + wheelCudnn), r.output());
        assertTrue(lineOf(r.output(), "libnccl.so.2").endsWith("<- " + cudaLib), r.output());
        assertTrue(lineOf(r.output(), "libcuda.so.1").endsWith("<- " + driver), r.output());
        assertTrue(r.output().contains("LD_LIBRARY_PATH=" + cudaLib + ":" + driver + ":" + wheelCublas + ":"
                + wheelCudnn), r.output());
        assertTrue(r.output().contains("all required CUDA libraries found"), r.output());
        assertFalse(r.output().contains("MISSING"), r.output());
    }

    static Stream<Arguments> missingLibraries() {
        return Stream.of(
                Arguments.of(List.of("libcublas.so.13"), List.of("libcublas.so.13 (cuBLAS)")),
                Arguments.of(List.of("libcudnn.so.9"), List.of("libcudnn.so.9 (cuDNN)")),
                Arguments.of(List.of("libnccl.so.2", "libcublas.so.13"),
                        List.of("libcublas.so.13 (cuBLAS)", "libnccl.so.2 (NCCL)")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("missingLibraries")
    void libs_requiredLibraryMissing_failsWithOneMessageListingIt(List<String> absent, List<String> named,
                                                                  @TempDir Path dir) throws Exception {
        Path bundle = bundle(dir);
        Path lib = dir.resolve("lib");
        for (String soname : List.of("libcublas.so.13", "libcudnn.so.9", "libnccl.so.2", "libcuda.so.1")) {
            if (!absent.contains(soname)) {
                fakeLibrary(lib, soname);
            }
        }

        Result r = run(dir, Map.of("MUON_CUDA_LIB_PATH", lib.toString()), bundle.resolve("run.sh").toString(), "libs");

        assertEquals(3, r.status(), r.output());
        String message = r.output().lines().filter(l -> l.contains("these libraries are missing")).findFirst()
                .orElse("");
        for (String n : named) {
            assertTrue(message.contains(n), "'" + n + "' not in: " + message);
        }
        assertTrue(message.contains("Searched, in order: " + lib), message);
        assertTrue(message.contains("MUON_CUDA_LIB_PATH"), message);
        for (String soname : absent) {
            assertTrue(lineOf(r.output(), soname).contains("MISSING"), r.output());
        }
    }

    @Test
    void libs_noDriverAndNoOptional_warnsButPasses(@TempDir Path dir) throws Exception {
        Path bundle = bundle(dir);
        Path lib = dir.resolve("lib");
        for (String soname : List.of("libcublas.so.13", "libcudnn.so.9", "libnccl.so.2")) {
            fakeLibrary(lib, soname);
        }

        Result r = run(dir, Map.of("MUON_CUDA_LIB_PATH", lib.toString()), bundle.resolve("run.sh").toString(), "libs");

        assertEquals(0, r.status(), r.output());
        assertTrue(r.output().contains("no NVIDIA driver (libcuda.so.1) found"), r.output());
        assertTrue(r.output().contains("optional libraries not found (loaded on demand; only some operations need "
                + "them): libnvrtc.so.13"), r.output());
    }

    @Test
    void env_printsTheExportLine_onlyWhenEveryRequiredLibraryIsFound(@TempDir Path dir) throws Exception {
        Path bundle = bundle(dir);
        Path lib = dir.resolve("lib");
        for (String soname : List.of("libcublas.so.13", "libcudnn.so.9")) {
            fakeLibrary(lib, soname);
        }
        Map<String, String> env = Map.of("MUON_CUDA_LIB_PATH", lib.toString());
        String runSh = bundle.resolve("run.sh").toString();

        Result missing = run(dir, env, runSh, "env");
        fakeLibrary(lib, "libnccl.so.2");
        Result found = run(dir, env, runSh, "env");

        assertEquals(3, missing.status(), missing.output());
        assertFalse(missing.output().contains("export LD_LIBRARY_PATH"), missing.output());
        assertEquals(0, found.status(), found.output());
        assertTrue(found.output().lines().anyMatch(l -> l.equals("export LD_LIBRARY_PATH=" + lib)), found.output());
    }

    /** Splits {@code data} as bundle.sh does: numbered parts and a SHA256SUMS naming them and the whole archive. */
    private static Path parts(Path dir, byte[] data) throws Exception {
        Path parts = Files.createDirectories(dir.resolve("parts"));
        Files.write(dir.resolve("muon-gpu-bundle.tar"), data);
        Result split = run(dir, Map.of(), "-c", "cd parts && split -b 1000 -d -a 2 ../muon-gpu-bundle.tar "
                + "muon-gpu-bundle.tar.part- && sha256sum muon-gpu-bundle.tar.part-* > SHA256SUMS && cd .. && "
                + "sha256sum muon-gpu-bundle.tar >> parts/SHA256SUMS && rm muon-gpu-bundle.tar");
        assertEquals(0, split.status(), split.output());
        return parts;
    }

    /** A real tar archive of one 2500-byte file, so that join.sh's unpacking is exercised too. */
    private static byte[] archive(Path dir, byte[] content) throws Exception {
        Path src = Files.createDirectories(dir.resolve("src/muon-gpu-bundle"));
        Files.write(src.resolve("payload.bin"), content);
        Result tar = run(dir, Map.of(), "-c", "tar -cf archive.tar -C src muon-gpu-bundle");
        assertEquals(0, tar.status(), tar.output());
        return Files.readAllBytes(dir.resolve("archive.tar"));
    }

    private static byte[] content() {
        byte[] content = new byte[2500];
        for (int i = 0; i < content.length; i++) {
            content[i] = (byte) (i * 31 + 7);
        }
        return content;
    }

    @Test
    void join_goodParts_giveBackTheArchive(@TempDir Path dir) throws Exception {
        byte[] content = content();
        Path parts = parts(dir, archive(dir, content));
        Path stash = dir.resolve("stash");
        Map<String, String> env = Map.of("MUON_GPU_STASH", stash.toString());
        String join = SCRIPTS.resolve("join.sh").toString();

        List<String> names;
        try (Stream<Path> s = Files.list(parts)) {
            names = s.map(p -> p.getFileName().toString()).filter(n -> n.contains(".part-")).sorted().toList();
        }
        assertTrue(names.size() >= 3, names.toString());
        for (String name : names) {
            Result added = run(dir, env, join, "add", parts.resolve(name).toString());
            assertEquals(0, added.status(), added.output());
        }
        Result joined = run(dir, env, join, "join", dir.resolve("out").toString());

        assertEquals(0, joined.status(), joined.output());
        assertArrayEquals(content, Files.readAllBytes(dir.resolve("out/muon-gpu-bundle/payload.bin")));
    }

    @Test
    void join_damagedPart_isRefusedOnArrival(@TempDir Path dir) throws Exception {
        Path parts = parts(dir, archive(dir, content()));
        Path part = parts.resolve("muon-gpu-bundle.tar.part-01");
        byte[] bytes = Files.readAllBytes(part);
        bytes[10] ^= 1;
        Files.write(part, bytes);
        Path stash = dir.resolve("stash");

        Result r = run(dir, Map.of("MUON_GPU_STASH", stash.toString()), SCRIPTS.resolve("join.sh").toString(), "add",
                part.toString());

        assertEquals(1, r.status(), r.output());
        assertTrue(r.output().contains("muon-gpu-bundle.tar.part-01: sha256 ")
                && r.output().contains("damaged in transfer"), r.output());
        assertFalse(Files.exists(stash.resolve("muon-gpu-bundle.tar.part-01")), "a damaged part must not be kept");
    }

    @Test
    void join_missingPart_namesIt_andJoinsNothing(@TempDir Path dir) throws Exception {
        Path parts = parts(dir, archive(dir, content()));
        Path stash = dir.resolve("stash");
        Map<String, String> env = Map.of("MUON_GPU_STASH", stash.toString());
        String join = SCRIPTS.resolve("join.sh").toString();
        assertEquals(0, run(dir, env, join, "add", parts.resolve("muon-gpu-bundle.tar.part-00").toString()).status());
        assertEquals(0, run(dir, env, join, "add", parts.resolve("muon-gpu-bundle.tar.part-02").toString()).status());

        Result r = run(dir, env, join, "join", dir.resolve("out").toString());

        assertEquals(1, r.status(), r.output());
        assertTrue(r.output().contains("missing parts: 01"), r.output());
        assertFalse(Files.exists(dir.resolve("out/muon-gpu-bundle")), "nothing may be unpacked");
    }
}
