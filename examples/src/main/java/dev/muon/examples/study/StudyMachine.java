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
 * checkout; the CPU is the first {@code model name} of {@code /proc/cpuinfo} with its {@code cpu family} and
 * {@code model} numbers, or {@code unknown}. The numbers are there because a virtual machine's model name is often
 * only the brand ("AMD EPYC"), which does not tell one CPU generation from the next, and the generations round
 * differently and run at different speeds.
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
     * The CPU of a {@code /proc/cpuinfo} file, for the CSV: its first processor's {@code model name}, then
     * {@code family F model M} where the file gives them, commas and quotes replaced by spaces.
     *
     * @param cpuinfo the file
     * @return for example {@code AMD EPYC family 25 model 17}, or {@code unknown} without a model name
     */
    static String cpu(Path cpuinfo) {
        try {
            String name = null;
            String family = null;
            String model = null;
            for (String line : Files.readAllLines(cpuinfo, StandardCharsets.UTF_8)) {
                if (line.isBlank()) {
                    break; // the end of the first processor's block
                }
                int colon = line.indexOf(':');
                if (colon < 0) {
                    continue;
                }
                String key = line.substring(0, colon).trim();
                String value = line.substring(colon + 1).trim();
                switch (key) {
                    case "model name" -> name = value;
                    case "cpu family" -> family = value;
                    case "model" -> model = value;
                    default -> { }
                }
            }
            if (name != null) {
                String numbers = (family == null ? "" : " family " + family) + (model == null ? "" : " model " + model);
                return clean(name + numbers);
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
