package dev.muon.examples.study;

import dev.muon.examples.DataError;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The study's results file, {@code runs.csv}: one row per finished run, appended when the run ends, so that a
 * sweep that is stopped (killed, or out of time) loses only the runs in progress and goes on where it stopped
 * ({@link ResultsFile}: a row cut short by a kill is skipped when the file is read, and its cell runs again; a row
 * that does not have every column or whose numbers do not parse counts as cut short). The curve is in the row:
 * {@code eval_steps}, {@code val_loss} and {@code train_seconds} are lists separated by {@code ;}. No field holds a
 * comma or a quote, so no field is quoted.
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
            return ResultsFile.firstByKey(results, r -> r.cell().key(), r -> r);
        }
    }

    /**
     * Appends a finished run; creates the file with its header if it does not exist.
     *
     * @param csv    the file
     * @param result the run
     * @throws DataError naming the file, if it cannot be written
     */
    static void append(Path csv, StudyResult result) {
        ResultsFile.append(csv, HEADER, row(result));
    }

    /**
     * The lines of one of the study's CSV files (the results and the timing), read whole.
     *
     * @param csv the file, which exists
     * @return its lines
     * @throws DataError naming the file, if it cannot be read
     */
    static List<String> readLines(Path csv) {
        return ResultsFile.readLines(csv);
    }

    /**
     * Reads the finished runs of a results file.
     *
     * @param csv the file
     * @return the runs, in the file's order, and the lines skipped; empty if the file does not exist
     * @throws DataError naming the file, if it cannot be read or its header is not the study's
     */
    static Contents read(Path csv) {
        ResultsFile.Rows<StudyResult> rows = ResultsFile.read(csv, HEADER, "a study results file's", StudyCsv::parse);
        return new Contents(rows.rows(), rows.skippedLines());
    }

    /** A row of the file. */
    static String row(StudyResult r) {
        StudyCell c = r.cell();
        return String.join(",", c.arm().id(), Double.toString(c.adamwLr()), Double.toString(c.muonLr()),
                Double.toString(c.weightDecay()), Long.toString(c.seed()), Integer.toString(c.width()),
                Integer.toString(c.layers()), Integer.toString(c.heads()), Integer.toString(c.context()),
                Integer.toString(c.batch()), Integer.toString(c.steps()), Integer.toString(c.evals()),
                ResultsFile.runColumns(r, r.corpus()));
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
        ResultsFile.RunColumns run = ResultsFile.runColumns(f, 12);
        int[] steps = run.evalSteps();
        if (!Arrays.equals(steps, cell.evalSteps()) || run.valLoss().length != steps.length
                || run.trainSeconds().length != steps.length) {
            throw new IllegalArgumentException("the curve's lists do not match the cell's evaluation steps");
        }
        return new StudyResult(cell, steps, run.valLoss(), run.trainSeconds(), run.diverged(), run.wallSeconds(),
                run.threads(), run.workers(), run.loadStart(), run.loadEnd(), run.machine(), run.corpusFile(),
                run.startedUtc());
    }
}
