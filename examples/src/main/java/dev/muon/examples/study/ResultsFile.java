package dev.muon.examples.study;

import dev.muon.examples.DataError;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * A study's results file ({@link StudyCsv}, {@link SecondCsv}): a CSV of one row per finished run, appended when the
 * run ends, so that a sweep that is stopped (killed, or out of time) loses only the runs in progress and goes on
 * where it stopped.
 *
 * <p>A row is written with one positional write at the end of the file, under an exclusive file lock, and forced
 * to disk. A row cut short by a kill during that write lacks its line break: the next append starts a new line
 * first, and {@link #read} skips any row that its parser refuses (and reports it), so that its run is made again.
 */
final class ResultsFile {
    private ResultsFile() {
    }

    /**
     * The rows of a file that hold finished runs, and the lines that do not.
     *
     * @param rows         the parsed rows, in the file's order
     * @param skippedLines the 1-based numbers of the lines the parser refused
     * @param <T>          what a row is
     */
    record Rows<T>(List<T> rows, List<Integer> skippedLines) {
    }

    /**
     * Appends a row; creates the file with its header if it does not exist.
     *
     * @param csv    the file
     * @param header the columns, written first into a new file
     * @param row    the row, without a line break
     * @throws DataError naming the file, if it cannot be written
     */
    static synchronized void append(Path csv, List<String> header, String row) {
        // synchronized: a JVM may hold a file's lock only once, and a sweep's workers share this file.
        try (FileChannel channel = FileChannel.open(csv, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE); FileLock lock = channel.lock()) {
            long size = channel.size();
            StringBuilder out = new StringBuilder();
            if (size == 0) {
                out.append(String.join(",", header)).append('\n');
            } else {
                ByteBuffer last = ByteBuffer.allocate(1);
                channel.read(last, size - 1);
                if (last.get(0) != '\n') {
                    out.append('\n');
                }
            }
            out.append(row).append('\n');
            ByteBuffer bytes = ByteBuffer.wrap(out.toString().getBytes(StandardCharsets.UTF_8));
            long position = size;
            while (bytes.hasRemaining()) {
                position += channel.write(bytes, position);
            }
            channel.force(true);
        } catch (IOException e) {
            throw new DataError(csv + ": cannot append the run's row (" + DataError.reason(e) + ")", e);
        }
    }

    /**
     * The lines of a study CSV file (results or timing), read whole.
     *
     * @param csv the file, which exists
     * @return its lines
     * @throws DataError naming the file, if it cannot be read
     */
    static List<String> readLines(Path csv) {
        try {
            return Files.readAllLines(csv, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new DataError(csv + ": cannot read it (" + DataError.reason(e) + ")", e);
        }
    }

    /**
     * Reads the rows of a results file.
     *
     * @param csv    the file
     * @param header the columns the file must start with
     * @param kind   what the file is, for the message of a wrong header, such as {@code "a study results file's"}
     * @param parse  a line to its row; throws {@link IllegalArgumentException} or
     *               {@link IndexOutOfBoundsException} for a line that is not a complete row
     * @param <T>    what a row is
     * @return the rows, in the file's order, and the lines skipped; empty if the file does not exist
     * @throws DataError naming the file, if it cannot be read or its header is not {@code header}
     */
    static <T> Rows<T> read(Path csv, List<String> header, String kind, Function<String, T> parse) {
        if (!Files.exists(csv)) {
            return new Rows<>(List.of(), List.of());
        }
        List<String> lines = readLines(csv);
        if (lines.isEmpty()) {
            return new Rows<>(List.of(), List.of());
        }
        if (!Arrays.asList(lines.get(0).split(",", -1)).equals(header)) {
            throw new DataError(csv + ": its header is not " + kind + " (expected " + String.join(",", header)
                    + ", got " + lines.get(0) + ")");
        }
        List<T> rows = new ArrayList<>();
        List<Integer> skipped = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            if (lines.get(i).isBlank()) {
                continue;
            }
            try {
                rows.add(parse.apply(lines.get(i)));
            } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
                skipped.add(i + 1);
            }
        }
        return new Rows<>(List.copyOf(rows), List.copyOf(skipped));
    }
}
