package dev.muon.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.OptionalDouble;

/**
 * The machine's load while an example measured its seconds, for the figures: a seconds panel drawn on a busy
 * machine says so ({@code docs/examples.md} states the load of each published one).
 */
public final class MachineLoad {
    private static final Path LOADAVG = Path.of("/proc/loadavg");

    private MachineLoad() {
    }

    /**
     * The one-minute load average, where the system reports one (Linux).
     *
     * @return the load average, or empty
     */
    public static OptionalDouble now() {
        try {
            String first = Files.readString(LOADAVG, StandardCharsets.US_ASCII).trim().split("\\s+")[0];
            return OptionalDouble.of(Double.parseDouble(first));
        } catch (IOException | RuntimeException unavailable) {
            return OptionalDouble.empty();
        }
    }

    /**
     * A note for a seconds panel: the load average at the start and at the end, and the cores.
     *
     * @param start the load average when the timing began
     * @param end   the load average when it ended
     * @return such as {@code load average 0.4 to 0.6 on 2 cores}, or empty if either is unknown
     */
    static String note(OptionalDouble start, OptionalDouble end) {
        if (start.isEmpty() || end.isEmpty()) {
            return "";
        }
        return String.format(Locale.ROOT, "load average %.1f to %.1f on %d cores", start.getAsDouble(),
                end.getAsDouble(), Runtime.getRuntime().availableProcessors());
    }
}
