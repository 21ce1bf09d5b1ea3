package dev.muon.distributed;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.fail;

/** Starts {@link ShardedTrainingWorker} JVMs on 127.0.0.1, one per rank, and waits for them. */
final class WorkerLauncher {
    private WorkerLauncher() {
    }

    /** A port that was free a moment ago: the rendezvous store of rank 0 binds it. */
    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        }
    }

    /** A group of this process alone, on a free port, with a 20 s timeout: for tests of one rank in this JVM. */
    static DistributedGroup groupOfOne() throws IOException {
        return DistributedGroup.join(GroupConfig.of("127.0.0.1", freePort(), 0, 1)
                .withTimeout(Duration.ofSeconds(20)));
    }

    /**
     * Runs one scenario with {@code world} ranks; returns the processes' exit codes once {@code mustFinish} ranks
     * have exited (the others are killed), failing with their logs if that takes longer than {@code limitSeconds}.
     */
    static int[] run(String scenario, int world, Path dir, long timeoutMillis, int limitSeconds,
                     List<Integer> mustFinish, String... extra) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        int port = freePort();
        List<Process> processes = new ArrayList<>();
        try {
            for (int rank = 0; rank < world; rank++) {
                List<String> command = new ArrayList<>(List.of(java, "-Xmx384m", "-cp",
                        System.getProperty("java.class.path"), ShardedTrainingWorker.class.getName(), scenario,
                        String.valueOf(rank), String.valueOf(world), String.valueOf(port), dir.toString(),
                        String.valueOf(timeoutMillis)));
                command.addAll(List.of(extra));
                ProcessBuilder builder = new ProcessBuilder(command);
                builder.redirectErrorStream(true);
                builder.redirectOutput(log(dir, scenario, rank).toFile());
                // Two cores for all ranks: OpenMP threads that spin would starve the other processes.
                builder.environment().put("OMP_WAIT_POLICY", "PASSIVE");
                builder.environment().put("OMP_NUM_THREADS", "1");
                builder.environment().put("OPENBLAS_NUM_THREADS", "1");
                processes.add(builder.start());
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(limitSeconds);
            int[] codes = new int[world];
            for (int rank : mustFinish) {
                long left = deadline - System.nanoTime();
                if (!processes.get(rank).waitFor(Math.max(left, 0), TimeUnit.NANOSECONDS)) {
                    fail("rank " + rank + " of scenario " + scenario + " did not finish in " + limitSeconds
                            + " s; logs:\n" + logs(dir, scenario, world));
                }
                codes[rank] = processes.get(rank).exitValue();
            }
            return codes;
        } finally {
            for (Process p : processes) {
                p.destroyForcibly();
            }
            for (Process p : processes) {
                p.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    static Path log(Path dir, String scenario, int rank) {
        return dir.resolve(scenario + "-rank" + rank + ".log");
    }

    static String logs(Path dir, String scenario, int world) throws IOException {
        StringBuilder text = new StringBuilder();
        for (int rank = 0; rank < world; rank++) {
            Path log = log(dir, scenario, rank);
            text.append("---- rank ").append(rank).append(" ----\n");
            if (Files.exists(log)) {
                List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
                // The assignment table is printed by every build; the end of the log is what matters.
                text.append(String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size())));
            }
            text.append('\n');
        }
        return text.toString();
    }

    static java.util.Map<String, String> stats(Path file) throws IOException {
        java.util.Map<String, String> map = new java.util.HashMap<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            int eq = line.indexOf('=');
            map.put(line.substring(0, eq), line.substring(eq + 1));
        }
        return map;
    }
}
