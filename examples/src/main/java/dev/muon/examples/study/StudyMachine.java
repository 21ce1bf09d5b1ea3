package dev.muon.examples.study;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What a study row says about where it ran: the commit of the code, the CPU model and the machine's cores. The
 * commit is {@code git rev-parse} of the working tree the run started in, with {@code -dirty} when a tracked
 * source file ({@code *.java}, {@code *.xml}, {@code *.c}) differs from it, or {@code unknown} outside a git
 * checkout; the CPU is the first {@code model name} of {@code /proc/cpuinfo}, or {@code unknown}.
 *
 * @param commit the commit
 * @param cpu    the CPU model
 * @param cores  the cores the JVM sees
 */
record StudyMachine(String commit, String cpu, int cores) {
    /** This machine, looked up once. */
    static StudyMachine here() {
        return Holder.HERE;
    }

    /** Looked up at first use: git and /proc are read once per JVM. */
    private static final class Holder {
        static final StudyMachine HERE = new StudyMachine(gitCommit(), cpu(Path.of("/proc/cpuinfo")),
                Runtime.getRuntime().availableProcessors());
    }

    /**
     * The CPU model of a {@code /proc/cpuinfo} file, for the CSV: commas and quotes replaced by spaces.
     *
     * @param cpuinfo the file
     * @return the first {@code model name}, or {@code unknown}
     */
    static String cpu(Path cpuinfo) {
        try {
            for (String line : Files.readAllLines(cpuinfo, StandardCharsets.UTF_8)) {
                if (line.startsWith("model name")) {
                    return clean(line.substring(line.indexOf(':') + 1));
                }
            }
        } catch (IOException | RuntimeException unavailable) {
            // Not Linux, or not readable: the row says so.
        }
        return "unknown";
    }

    /** A value for a CSV field: no commas, quotes or line breaks, spaces collapsed. */
    static String clean(String value) {
        return value.replaceAll("[,\"\\r\\n]", " ").replaceAll("\\s+", " ").trim();
    }

    private static String gitCommit() {
        String head = git("rev-parse", "--short=12", "HEAD");
        if (head == null || head.isEmpty()) {
            return "unknown";
        }
        String changes = git("status", "--porcelain", "--untracked-files=no", "--", ":/*.java", ":/*.xml",
                ":/*.c");
        return changes == null || changes.isEmpty() ? head : head + "-dirty";
    }

    /** A git command's output, trimmed, or null if git is missing or fails. */
    private static String git(String... args) {
        try {
            List<String> command = new java.util.ArrayList<>(List.of("git"));
            command.addAll(List.of(args));
            Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            p.getErrorStream().transferTo(java.io.OutputStream.nullOutputStream());
            if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroy();
                return null;
            }
            return out;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
