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
 * on them; {@code run.sh check} picks the bundle's libtorch or the machine's; {@code join.sh} refuses a damaged or
 * missing part, unpacks the core alone, and joins good parts into the original archives; {@code gpu-checks.sh}
 * records each check as it ends and keeps to its time budget.
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

    /**
     * A bundle as bundle.sh lays out its parts: a core archive holding {@code core.bin}, and a torch archive holding
     * {@code torch.bin} split into parts of 1000 bytes; SHA256SUMS names all of them and the whole torch archive.
     */
    private static Path parts(Path dir, byte[] core, byte[] torch) throws Exception {
        Path parts = Files.createDirectories(dir.resolve("parts"));
        Path coreTree = Files.createDirectories(dir.resolve("core-src/muon-gpu-bundle"));
        Path torchTree = Files.createDirectories(dir.resolve("torch-src/muon-gpu-bundle/natives"));
        Files.write(coreTree.resolve("core.bin"), core);
        Files.write(torchTree.resolve("torch.bin"), torch);
        Result packed = run(dir, Map.of(), "-c", "tar -C core-src -cJf parts/muon-gpu-core.tar.xz muon-gpu-bundle"
                + " && tar -C torch-src -cJf muon-gpu-torch.tar.xz muon-gpu-bundle"
                + " && cd parts && split -b 1000 -d -a 2 ../muon-gpu-torch.tar.xz muon-gpu-torch.tar.xz.part-"
                + " && sha256sum muon-gpu-core.tar.xz muon-gpu-torch.tar.xz.part-* > SHA256SUMS"
                + " && cd .. && sha256sum muon-gpu-torch.tar.xz >> parts/SHA256SUMS && rm muon-gpu-torch.tar.xz");
        assertEquals(0, packed.status(), packed.output());
        return parts;
    }

    /** Bytes that xz cannot shrink much, so that the torch archive spans several parts. */
    private static byte[] content(int length, int seed) {
        byte[] content = new byte[length];
        new java.util.Random(seed).nextBytes(content);
        return content;
    }

    private static List<String> torchParts(Path parts) throws IOException {
        try (Stream<Path> s = Files.list(parts)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.contains(".part-")).sorted().toList();
        }
    }

    @Test
    void join_goodParts_giveBackBothArchives(@TempDir Path dir) throws Exception {
        byte[] core = content(1500, 1);
        byte[] torch = content(2500, 2);
        Path parts = parts(dir, core, torch);
        Map<String, String> env = Map.of("MUON_GPU_STASH", dir.resolve("stash").toString());
        String join = SCRIPTS.resolve("join.sh").toString();

        List<String> names = torchParts(parts);
        assertTrue(names.size() >= 3, names.toString());
        assertEquals(0, run(dir, env, join, "add", parts.resolve("muon-gpu-core.tar.xz").toString(),
                parts.resolve(names.get(0)).toString()).status());
        for (String name : names.subList(1, names.size())) {
            Result added = run(dir, env, join, "add", parts.resolve(name).toString());
            assertEquals(0, added.status(), added.output());
        }
        Result joined = run(dir, env, join, "join", dir.resolve("out").toString());

        assertEquals(0, joined.status(), joined.output());
        assertArrayEquals(core, Files.readAllBytes(dir.resolve("out/muon-gpu-bundle/core.bin")));
        assertArrayEquals(torch, Files.readAllBytes(dir.resolve("out/muon-gpu-bundle/natives/torch.bin")));
    }

    @Test
    void core_unpacksTheCoreAlone_whileTorchPartsAreMissing(@TempDir Path dir) throws Exception {
        byte[] core = content(1500, 3);
        Path parts = parts(dir, core, content(2500, 4));
        Map<String, String> env = Map.of("MUON_GPU_STASH", dir.resolve("stash").toString());
        String join = SCRIPTS.resolve("join.sh").toString();
        Result added = run(dir, env, join, "add", parts.resolve("muon-gpu-core.tar.xz").toString());

        Result unpacked = run(dir, env, join, "core", dir.resolve("out").toString());

        assertTrue(added.output().contains("holds 1 of") && added.output().contains("missing: muon-gpu-torch"),
                added.output());
        assertEquals(0, unpacked.status(), unpacked.output());
        assertArrayEquals(core, Files.readAllBytes(dir.resolve("out/muon-gpu-bundle/core.bin")));
        assertFalse(Files.exists(dir.resolve("out/muon-gpu-bundle/natives")), "no torch part was unpacked");
    }

    @Test
    void join_damagedPart_isRefusedOnArrival(@TempDir Path dir) throws Exception {
        Path parts = parts(dir, content(1500, 5), content(2500, 6));
        Path part = parts.resolve("muon-gpu-torch.tar.xz.part-01");
        byte[] bytes = Files.readAllBytes(part);
        bytes[10] ^= 1;
        Files.write(part, bytes);
        Path stash = dir.resolve("stash");

        Result r = run(dir, Map.of("MUON_GPU_STASH", stash.toString()), SCRIPTS.resolve("join.sh").toString(), "add",
                part.toString());

        assertEquals(1, r.status(), r.output());
        assertTrue(r.output().contains("muon-gpu-torch.tar.xz.part-01: sha256 ")
                && r.output().contains("damaged in transfer"), r.output());
        assertFalse(Files.exists(stash.resolve("muon-gpu-torch.tar.xz.part-01")), "a damaged part must not be kept");
    }

    @Test
    void join_missingPart_namesIt_andUnpacksNothing(@TempDir Path dir) throws Exception {
        Path parts = parts(dir, content(1500, 7), content(2500, 8));
        Map<String, String> env = Map.of("MUON_GPU_STASH", dir.resolve("stash").toString());
        String join = SCRIPTS.resolve("join.sh").toString();
        for (String name : List.of("muon-gpu-core.tar.xz", "muon-gpu-torch.tar.xz.part-00",
                "muon-gpu-torch.tar.xz.part-02")) {
            assertEquals(0, run(dir, env, join, "add", parts.resolve(name).toString()).status());
        }

        Result r = run(dir, env, join, "join", dir.resolve("out").toString());

        assertEquals(1, r.status(), r.output());
        assertTrue(r.output().contains("missing: muon-gpu-torch.tar.xz.part-01"), r.output());
        assertFalse(Files.exists(dir.resolve("out/muon-gpu-bundle")), "nothing may be unpacked");
    }

    /** A bundle with a stand-in Java runtime that only answers -version, and no libtorch of its own. */
    private static Path bundleWithJava(Path dir) throws IOException {
        Path bundle = bundle(dir);
        Path java = Files.createDirectories(bundle.resolve("jre/bin")).resolve("java");
        Files.writeString(java, "#!/bin/sh\necho 'openjdk version \"17\" (stand-in)' >&2\n");
        assertTrue(java.toFile().setExecutable(true));
        Files.createDirectories(bundle.resolve("natives/org/bytedeco/pytorch/linux-x86_64-gpu"));
        return bundle;
    }

    @Test
    void check_withoutLibtorchInTheBundle_usesTheMachinesFolder(@TempDir Path dir) throws Exception {
        Path bundle = bundleWithJava(dir);
        Path lib = dir.resolve("lib");
        for (String soname : List.of("libcublas.so.13", "libcudnn.so.9", "libnccl.so.2", "libcuda.so.1")) {
            fakeLibrary(lib, soname);
        }
        Path torchLib = dir.resolve("site-packages/torch/lib");
        fakeLibrary(torchLib, "libtorch_cpu.so");

        Result r = run(dir, Map.of("MUON_CUDA_LIB_PATH", lib.toString(), "MUON_TORCH_LIB", torchLib.toString()),
                bundle.resolve("run.sh").toString(), "check");

        assertEquals(0, r.status(), r.output());
        assertTrue(r.output().contains("libtorch: the machine's, " + torchLib), r.output());
    }

    @Test
    void check_withoutAnyLibtorch_failsWithExit3_namingWhatToDo(@TempDir Path dir) throws Exception {
        Path bundle = bundleWithJava(dir);
        Path lib = dir.resolve("lib");
        fakeLibrary(lib, "libcuda.so.1");

        Result r = run(dir, Map.of("MUON_CUDA_LIB_PATH", lib.toString(), "MUON_TORCH_LIB", dir.resolve("none")
                .toString()), bundle.resolve("run.sh").toString(), "check");

        assertEquals(3, r.status(), r.output());
        assertTrue(r.output().contains("no libtorch_cpu.so was found") && r.output().contains("MUON_TORCH_LIB"),
                r.output());
    }

    @Test
    void check_withTheBundlesLibtorch_saysSo(@TempDir Path dir) throws Exception {
        Path bundle = bundleWithJava(dir);
        fakeLibrary(bundle.resolve("natives/org/bytedeco/pytorch/linux-x86_64-gpu"), "libtorch_cpu.so");
        Path lib = dir.resolve("lib");
        for (String soname : List.of("libcublas.so.13", "libcudnn.so.9", "libnccl.so.2", "libcuda.so.1")) {
            fakeLibrary(lib, soname);
        }

        Result r = run(dir, Map.of("MUON_CUDA_LIB_PATH", lib.toString()), bundle.resolve("run.sh").toString(),
                "check");

        assertEquals(0, r.status(), r.output());
        assertTrue(r.output().contains("libtorch: the bundle's own GPU build"), r.output());
    }

    /**
     * gpu-checks.sh with a stand-in run.sh whose GPU probe finds no GPU and whose JUnit runs skip everything: each
     * check gets its line in summary.tsv as it ends, the skips are called skips, and a check that does not fit the
     * budget is named as skipped, not run.
     */
    @Test
    void gpuChecks_recordEachCheck_andSkipWhatTheBudgetCannotHold(@TempDir Path dir) throws Exception {
        Path bundle = Files.createDirectories(dir.resolve("bundle"));
        Files.copy(SCRIPTS.resolve("gpu-checks.sh"), bundle.resolve("gpu-checks.sh"));
        Files.writeString(bundle.resolve("run.sh"), String.join("\n",
                "#!/bin/bash",
                "case \"$1\" in",
                "  check|symbols) echo \"stand-in $1\" ;;",
                "  main) echo \"probe: gpu=unavailable cause=none here\"; exit 2 ;;",
                "  tests) printf '[         3 tests found           ]\\n[         3 tests aborted         ]\\n"
                        + "[         0 tests successful      ]\\n[         0 tests failed          ]\\n' ;;",
                "esac", ""));
        assertTrue(bundle.resolve("run.sh").toFile().setExecutable(true));
        Path out = dir.resolve("out");

        Result r = run(dir, Map.of("MUON_GPU_BUDGET_S", "170"), bundle.resolve("gpu-checks.sh").toString(),
                out.toString());

        assertEquals(0, r.status(), r.output());
        List<String> lines = Files.readAllLines(out.resolve("summary.tsv"));
        assertEquals("check\texit\tseconds\tresult", lines.get(0));
        assertTrue(lines.get(1).startsWith("0-machine\t0\t"), lines.toString());
        assertTrue(lines.get(2).startsWith("a-probe\t2\t") && lines.get(2).endsWith("no GPU (see the log)"),
                lines.toString());
        // A 170 s budget holds no check that may take 180 s (b, e), and every one that may take 150 s or less.
        assertTrue(lines.get(3).startsWith("b-gpu-suite\t-\t0\tskipped: "), lines.toString());
        assertTrue(lines.get(4).startsWith("c-golden\t0\t") && lines.get(4).contains("all skipped")
                && lines.get(4).contains("3 skipped"), lines.toString());
        assertTrue(lines.get(6).startsWith("e-timings\t-\t0\tskipped: "), lines.toString());
        assertTrue(lines.get(7).startsWith("f-gloo\t0\t"), lines.toString());
        assertTrue(lines.get(8).startsWith("g-offload\t0\t") && lines.get(8).contains("all skipped"),
                lines.toString());
        assertEquals(9, lines.size(), lines.toString());
        assertTrue(Files.readString(out.resolve("a-probe.log")).contains("probe: gpu=unavailable"));
    }
}
