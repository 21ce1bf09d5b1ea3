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
import java.util.stream.Collectors;

/**
 * The study's results file, {@code runs.csv}: one row per finished run, appended when the run ends, so that a
 * sweep that is stopped (killed, or out of time) loses only the runs in progress and goes on where it stopped.
 *
 * <p>A row is written with one positional write at the end of the file, under an exclusive file lock, and forced
 * to disk. A row cut short by a kill during that write lacks its line break: the next append starts a new line
 * first, and {@link #read} skips any row that does not have every column or whose numbers do not parse (and
 * reports them), so that its cell runs again. The curve is in the row: {@code eval_steps}, {@code val_loss} and
 * {@code train_seconds} are lists separated by {@code ;}. No field holds a comma or a quote, so no field is quoted.
 */
final class StudyCsv {
    /** The columns, in order. */
    static final List<String> HEADER = List.of("optimizer", "adamw_lr", "muon_lr", "weight_decay", "seed", "width",
            "layers", "heads", "context", "batch", "steps", "evals", "final_val_loss", "diverged", "eval_steps",
            "val_loss", "train_seconds", "ms_per_step", "wall_seconds", "threads", "workers", "load_start",
            "load_end", "cpu", "commit", "corpus", "started_utc");
    /** The results file's name in a results folder. */
    static final String FILE = "runs.csv";

    private StudyCsv() {
    }

    /** The rows of a file that hold finished runs, and the lines that do not. */
    record Contents(List<StudyResult> results, List<Integer> skippedLines) {
        /** The runs by cell key; a cell written twice counts once, its first row. */
        Map<String, StudyResult> byKey() {
            Map<String, StudyResult> out = new LinkedHashMap<>();
            for (StudyResult r : results) {
                out.putIfAbsent(r.cell().key(), r);
            }
            return out;
        }
    }

    /**
     * Appends a finished run; creates the file with its header if it does not exist.
     *
     * @param csv    the file
     * @param result the run
     * @throws DataError naming the file, if it cannot be written
     */
    static synchronized void append(Path csv, StudyResult result) {
        // synchronized: a JVM may hold a file's lock only once, and the sweep's workers share this file.
        try (FileChannel channel = FileChannel.open(csv, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE); FileLock lock = channel.lock()) {
            long size = channel.size();
            StringBuilder out = new StringBuilder();
            if (size == 0) {
                out.append(String.join(",", HEADER)).append('\n');
            } else {
                ByteBuffer last = ByteBuffer.allocate(1);
                channel.read(last, size - 1);
                if (last.get(0) != '\n') {
                    out.append('\n');
                }
            }
            out.append(row(result)).append('\n');
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
     * The lines of one of the study's CSV files (the results and the timing), read whole.
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
     * Reads the finished runs of a results file.
     *
     * @param csv the file
     * @return the runs, in the file's order, and the lines skipped; empty if the file does not exist
     * @throws DataError naming the file, if it cannot be read or its header is not the study's
     */
    static Contents read(Path csv) {
        if (!Files.exists(csv)) {
            return new Contents(List.of(), List.of());
        }
        List<String> lines = readLines(csv);
        if (lines.isEmpty()) {
            return new Contents(List.of(), List.of());
        }
        List<String> header = Arrays.asList(lines.get(0).split(",", -1));
        if (!header.equals(HEADER)) {
            throw new DataError(csv + ": its header is not a study results file's (expected "
                    + String.join(",", HEADER) + ", got " + lines.get(0) + ")");
        }
        List<StudyResult> results = new ArrayList<>();
        List<Integer> skipped = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            if (lines.get(i).isBlank()) {
                continue;
            }
            try {
                results.add(parse(lines.get(i)));
            } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
                skipped.add(i + 1);
            }
        }
        return new Contents(List.copyOf(results), List.copyOf(skipped));
    }

    /** A row of the file. */
    static String row(StudyResult r) {
        StudyCell c = r.cell();
        StudyMachine m = r.machine();
        return String.join(",", c.arm().id(), Double.toString(c.adamwLr()), Double.toString(c.muonLr()),
                Double.toString(c.weightDecay()), Long.toString(c.seed()), Integer.toString(c.width()),
                Integer.toString(c.layers()), Integer.toString(c.heads()), Integer.toString(c.context()),
                Integer.toString(c.batch()), Integer.toString(c.steps()), Integer.toString(c.evals()),
                number(r.finalValLoss(), "%.6f"), Boolean.toString(r.diverged()),
                Arrays.stream(r.evalSteps()).mapToObj(Integer::toString).collect(Collectors.joining(";")),
                list(r.valLoss(), "%.6f"), list(r.trainSeconds(), "%.4f"), number(r.msPerStep(), "%.3f"),
                number(r.wallSeconds(), "%.3f"), Integer.toString(r.threads()), Integer.toString(r.workers()),
                number(r.loadStart(), "%.2f"), number(r.loadEnd(), "%.2f"), StudyMachine.clean(m.cpu()),
                StudyMachine.clean(m.commit()), StudyMachine.clean(r.corpus()), r.startedUtc());
    }

    /**
     * A row read back.
     *
     * @param line the line
     * @return the run
     * @throws IllegalArgumentException if a column is missing or does not parse
     */
    static StudyResult parse(String line) {
        String[] f = line.split(",", -1);
        if (f.length != HEADER.size()) {
            throw new IllegalArgumentException("has " + f.length + " columns, expected " + HEADER.size());
        }
        StudyCell cell = new StudyCell(StudyArm.of(f[0]), Double.parseDouble(f[1]), Double.parseDouble(f[2]),
                Double.parseDouble(f[3]), Long.parseLong(f[4]), Integer.parseInt(f[5]), Integer.parseInt(f[6]),
                Integer.parseInt(f[7]), Integer.parseInt(f[8]), Integer.parseInt(f[9]), Integer.parseInt(f[10]),
                Integer.parseInt(f[11]));
        if (!f[13].equals("true") && !f[13].equals("false")) {
            throw new IllegalArgumentException("diverged must be true or false, got " + f[13]);
        }
        int[] steps = Arrays.stream(f[14].split(";")).mapToInt(Integer::parseInt).toArray();
        double[] loss = Arrays.stream(f[15].split(";")).mapToDouble(Double::parseDouble).toArray();
        double[] seconds = Arrays.stream(f[16].split(";")).mapToDouble(Double::parseDouble).toArray();
        if (!Arrays.equals(steps, cell.evalSteps()) || loss.length != steps.length
                || seconds.length != steps.length) {
            throw new IllegalArgumentException("the curve's lists do not match the cell's evaluation steps");
        }
        return new StudyResult(cell, steps, loss, seconds, Boolean.parseBoolean(f[13]), Double.parseDouble(f[18]),
                Integer.parseInt(f[19]), Integer.parseInt(f[20]), Double.parseDouble(f[21]),
                Double.parseDouble(f[22]), new StudyMachine(f[24], f[23], 0), f[25], f[26]);
    }

    private static String number(double value, String format) {
        return Double.isFinite(value) ? String.format(Locale.ROOT, format, value) : Double.toString(value);
    }

    private static String list(double[] values, String format) {
        return Arrays.stream(values).mapToObj(v -> number(v, format)).collect(Collectors.joining(";"));
    }
}
