package dev.muon.examples;

import picocli.CommandLine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.stream.Stream;

/**
 * The folder that holds everything one run of an example writes, its figures and CSVs, so that no run leaves its
 * files beside another's: by default a new {@code target/runs/<example>-<date>-<time>}, or the {@code --out} folder,
 * which must be new or empty. Made before any training, so that a bad path costs no time.
 */
public final class RunFolder {
    private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss");

    private RunFolder() {
    }

    /**
     * Makes the run's folder.
     *
     * @param cli     the example's command line, for usage errors
     * @param out     the {@code --out} option, or null for a new folder under {@code target/runs}
     * @param example the example's name, the start of the default folder's name
     * @param now     the time the default folder is named after
     * @return the folder, absolute
     * @throws CommandLine.ParameterException if {@code out} holds files already
     * @throws DataError                       if the folder cannot be made
     */
    public static Path create(CommandLine cli, Path out, String example, LocalDateTime now) {
        Path dir;
        if (out == null) {
            Path base = Path.of("target", "runs", example + "-" + STAMP.format(now));
            dir = base;
            for (int n = 2; Files.exists(dir); n++) {
                dir = Path.of(base + "-" + n);
            }
        } else {
            dir = out;
            if (Files.isDirectory(dir) && !isEmpty(dir)) {
                throw new CommandLine.ParameterException(cli, "--out " + out + " is not empty: each run writes to"
                        + " a folder of its own (leave --out out for a new one under target/runs)");
            }
        }
        try {
            return Files.createDirectories(dir).toAbsolutePath().normalize();
        } catch (IOException e) {
            throw new DataError((out == null ? "" : "--out ") + dir + ": cannot make the folder ("
                    + DataError.reason(e) + ")", e);
        }
    }

    private static boolean isEmpty(Path dir) {
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.findAny().isEmpty();
        } catch (IOException e) {
            throw new DataError("--out " + dir + ": cannot list the folder (" + DataError.reason(e) + ")", e);
        }
    }
}
