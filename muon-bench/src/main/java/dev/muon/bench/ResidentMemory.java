package dev.muon.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

/**
 * This process's resident memory from a starting point on (Linux: {@code /proc/self/status}), for what a trial's
 * optimizer holds: {@code after - before} is its state and workspaces, {@code peak - before} adds what a step
 * allocates and frees. The peak is the kernel's high-water mark, reset at the start ({@code /proc/self/clear_refs},
 * as {@code pytorch_peer.py} does for its side), so an earlier allocation of the JVM does not count.
 */
final class ResidentMemory {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path STATUS = Path.of("/proc/self/status");

    private final long beforeKb;

    private ResidentMemory(long beforeKb) {
        this.beforeKb = beforeKb;
    }

    /** Resets the high-water mark to the current resident size and reads that size (-1 where Linux's files lack). */
    static ResidentMemory sinceNow() {
        try {
            Files.writeString(Path.of("/proc/self/clear_refs"), "5");
        } catch (IOException | UnsupportedOperationException e) {
            // Not Linux, or a kernel without the reset: the peak then counts from the process's start.
        }
        return new ResidentMemory(kilobytes("VmRSS:"));
    }

    /**
     * Prints one JSON line with {@code params} and the resident MiB {@code before}, {@code after} (now) and
     * {@code peak}, and appends it to {@code file} unless that is null.
     *
     * @param file   where to append the line, or null
     * @param params the trial's parameters, in order
     */
    void report(String file, Map<String, String> params) {
        ObjectNode line = JSON.createObjectNode();
        params.forEach(line::put);
        line.put("before", mib(beforeKb));
        line.put("after", mib(kilobytes("VmRSS:")));
        line.put("peak", mib(kilobytes("VmHWM:")));
        String text = line.toString();
        System.out.println("# resident MiB: " + text);
        if (file != null) {
            try {
                Files.writeString(Path.of(file), text + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot append the resident memory to " + file, e);
            }
        }
    }

    private static double mib(long kb) {
        return kb < 0 ? Double.NaN : kb / 1024.0;
    }

    /** A {@code kB} field of {@code /proc/self/status}, or -1. */
    private static long kilobytes(String field) {
        try {
            for (String l : Files.readAllLines(STATUS)) {
                if (l.startsWith(field)) {
                    return Long.parseLong(l.substring(field.length()).replace("kB", "").trim());
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }
}
