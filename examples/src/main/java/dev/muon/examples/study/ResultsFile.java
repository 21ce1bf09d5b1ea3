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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

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
     * The rows' values by key, a key that is in several rows (a cell written twice) taking its first row's.
     *
     * @param rows  the rows, in the file's order
     * @param key   a row's key
     * @param value a row's value
     * @param <T>   what a row is
     * @param <V>   what a value is
     * @return the values by key, in the order of the keys' first rows
     */
    static <T, V> Map<String, V> firstByKey(List<T> rows, Function<T, String> key, Function<T, V> value) {
        Map<String, V> out = new LinkedHashMap<>();
        for (T r : rows) {
            out.putIfAbsent(key.apply(r), value.apply(r));
        }
        return out;
    }

    /**
     * A number as the results files write it: with {@code format} where finite, else Java's {@code NaN} or
     * {@code Infinity}, which read back.
     *
     * @param value  the number
     * @param format such as {@code "%.6f"}
     * @return the field
     */
    static String number(double value, String format) {
        return Double.isFinite(value) ? String.format(Locale.ROOT, format, value) : Double.toString(value);
    }

    /**
     * A list of numbers as one field, separated by {@code ;}, each as {@link #number} writes it.
     *
     * @param values the numbers
     * @param format such as {@code "%.6f"}
     * @return the field
     */
    static String list(double[] values, String format) {
        return Arrays.stream(values).mapToObj(v -> number(v, format)).collect(Collectors.joining(";"));
    }

    /**
     * The columns both results files end a row with, after the cell's: {@code final_val_loss}, {@code diverged}, the
     * curve ({@code eval_steps}, {@code val_loss}, {@code train_seconds}, lists separated by {@code ;}),
     * {@code ms_per_step}, {@code wall_seconds}, {@code threads}, {@code workers}, {@code load_start},
     * {@code load_end}, {@code cpu}, {@code commit}, the corpus file and {@code started_utc}.
     *
     * @param r          the run
     * @param corpusFile the corpus file's name
     * @return the columns, joined by commas
     */
    static String runColumns(FinishedRun r, String corpusFile) {
        StudyMachine m = r.machine();
        return String.join(",", number(r.finalValLoss(), "%.6f"), Boolean.toString(r.diverged()),
                Arrays.stream(r.evalSteps()).mapToObj(Integer::toString).collect(Collectors.joining(";")),
                list(r.valLoss(), "%.6f"), list(r.trainSeconds(), "%.4f"), number(r.msPerStep(), "%.3f"),
                number(r.wallSeconds(), "%.3f"), Integer.toString(r.threads()), Integer.toString(r.workers()),
                number(r.loadStart(), "%.2f"), number(r.loadEnd(), "%.2f"), StudyMachine.clean(m.cpu()),
                StudyMachine.clean(m.commit()), StudyMachine.clean(corpusFile), r.startedUtc());
    }

    /**
     * The {@link #runColumns} of a row read back, without the two the curve gives ({@code final_val_loss},
     * {@code ms_per_step}).
     *
     * @param diverged     whether the training loss stopped being finite
     * @param evalSteps    the steps of the evaluations
     * @param valLoss      the validation loss at each
     * @param trainSeconds the training seconds before each
     * @param wallSeconds  the run's seconds
     * @param threads      libtorch's threads
     * @param workers      runs at once
     * @param loadStart    the load average at the start
     * @param loadEnd      the same at the end
     * @param machine      commit and CPU model (cores are not in the file: 0)
     * @param corpusFile   the corpus file's name
     * @param startedUtc   when the run started
     */
    record RunColumns(boolean diverged, int[] evalSteps, double[] valLoss, double[] trainSeconds, double wallSeconds,
                      int threads, int workers, double loadStart, double loadEnd, StudyMachine machine,
                      String corpusFile, String startedUtc) {
    }

    /**
     * Reads the {@link #runColumns} of a row.
     *
     * @param f    the row's fields, as many as its header has
     * @param from the index of {@code final_val_loss}
     * @return the columns
     * @throws IllegalArgumentException if {@code diverged} is not {@code true} or {@code false}, or a number does
     *                                  not parse
     */
    static RunColumns runColumns(String[] f, int from) {
        if (!f[from + 1].equals("true") && !f[from + 1].equals("false")) {
            throw new IllegalArgumentException("diverged must be true or false, got " + f[from + 1]);
        }
        int[] steps = Arrays.stream(f[from + 2].split(";")).mapToInt(Integer::parseInt).toArray();
        double[] loss = Arrays.stream(f[from + 3].split(";")).mapToDouble(Double::parseDouble).toArray();
        double[] seconds = Arrays.stream(f[from + 4].split(";")).mapToDouble(Double::parseDouble).toArray();
        return new RunColumns(Boolean.parseBoolean(f[from + 1]), steps, loss, seconds, Double.parseDouble(f[from + 6]),
                Integer.parseInt(f[from + 7]), Integer.parseInt(f[from + 8]), Double.parseDouble(f[from + 9]),
                Double.parseDouble(f[from + 10]), new StudyMachine(f[from + 12], f[from + 11], 0), f[from + 13],
                f[from + 14]);
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
