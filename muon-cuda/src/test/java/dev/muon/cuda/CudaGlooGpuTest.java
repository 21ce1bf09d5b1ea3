package dev.muon.cuda;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Distributed {@code Muon} with CUDA parameters over Gloo, W = 2, each rank in its own JVM ({@link CudaGlooWorker})
 * on the one GPU: the ranks end bit for bit equal to each other, and within the golden README's bfloat16 tolerance
 * ({@code 0.2·lr·steps} absolute) of the same steps in one process. Skips without a GPU, printing why.
 */
@Tag("gpu")
@ExtendWith(RequireCuda.class)
class CudaGlooGpuTest {
    private static final int WORLD = 2;

    @Test
    void shardedOverGloo_withCudaTensors_ranksAgree_andMatchOneProcess(@TempDir Path dir) throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        List<Process> ranks = new ArrayList<>();
        try {
            for (int rank = 0; rank < WORLD; rank++) {
                List<String> command = new ArrayList<>(List.of(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx2g"));
                // The natives' settings of this JVM (the GPU build, the library path, the JavaCPP cache).
                for (String key : System.getProperties().stringPropertyNames()) {
                    if (key.startsWith("org.bytedeco.") || key.startsWith("javacpp.") || key.equals("java.library.path")) {
                        command.add("-D" + key + "=" + System.getProperty(key));
                    }
                }
                command.addAll(List.of("-cp", classPath(), CudaGlooWorker.class.getName(), String.valueOf(rank),
                        String.valueOf(WORLD), String.valueOf(port), dir.toString()));
                ranks.add(new ProcessBuilder(command).redirectErrorStream(true)
                        .redirectOutput(dir.resolve("rank" + rank + ".log").toFile()).start());
            }
            List<double[]> local = CudaGlooWorker.run(null);
            for (int rank = 0; rank < WORLD; rank++) {
                boolean done = ranks.get(rank).waitFor(120, TimeUnit.SECONDS);
                String log = Files.readString(dir.resolve("rank" + rank + ".log"), StandardCharsets.UTF_8);
                System.out.println("---- rank " + rank + " ----\n" + log);
                assertTrue(done, "rank " + rank + " did not finish in 120 s");
                assertEquals(0, ranks.get(rank).exitValue(), "rank " + rank + " failed:\n" + log);
            }
            List<double[]> rank0 = read(dir.resolve("rank0.bin"));
            List<double[]> rank1 = read(dir.resolve("rank1.bin"));
            double tolerance = 0.2 * CudaGlooWorker.CONFIG.lr() * CudaGlooWorker.STEPS;
            for (int i = 0; i < local.size(); i++) {
                assertArrayEquals(rank0.get(i), rank1.get(i), "parameter " + i + ": the ranks differ");
                double max = 0;
                for (int j = 0; j < local.get(i).length; j++) {
                    max = Math.max(max, Math.abs(rank0.get(i)[j] - local.get(i)[j]));
                }
                System.out.printf("CudaGlooGpuTest: parameter %d max abs diff W=2 vs one process %.3e%n", i, max);
                assertTrue(max <= tolerance, "parameter " + i + ": " + max + " from one process");
            }
        } finally {
            for (Process p : ranks) {
                p.destroyForcibly();
            }
        }
    }

    /** This JVM's class path: the JUnit console puts the tests on a class loader of its own, not java.class.path. */
    private static String classPath() {
        Set<String> entries = new LinkedHashSet<>();
        ClassLoader loader = CudaGlooGpuTest.class.getClassLoader();
        while (loader != null) {
            if (loader instanceof URLClassLoader urls) {
                for (URL url : urls.getURLs()) {
                    entries.add(Path.of(java.net.URI.create(url.toString())).toString());
                }
            }
            loader = loader.getParent();
        }
        entries.addAll(List.of(System.getProperty("java.class.path").split(java.io.File.pathSeparator)));
        return String.join(java.io.File.pathSeparator, entries);
    }

    private static List<double[]> read(Path file) throws IOException {
        try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
            List<double[]> values = new ArrayList<>();
            int n = in.readInt();
            for (int i = 0; i < n; i++) {
                double[] v = new double[in.readInt()];
                for (int j = 0; j < v.length; j++) {
                    v[j] = in.readDouble();
                }
                values.add(v);
            }
            return values;
        }
    }
}
