package dev.muon.examples.study;

import dev.muon.examples.DataError;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The second study's results file, {@code runs.csv}: one row per finished run, appended and forced to disk when
 * the run ends ({@link ResultsFile}: a row cut short by a kill is skipped when the file is read, and its cell runs
 * again). The cell's key fields come first, each number in Java's shortest round-trip form so that a row read back
 * gives the same key; the curve is in the row, {@code eval_steps}, {@code val_loss} and {@code train_seconds} as
 * lists separated by {@code ;}. No field holds a comma or a quote, so no field is quoted.
 */
final class SecondCsv {
    /** The columns, in order. */
    static final List<String> HEADER = List.of("optimizer", "corpus", "steps", "adamw_lr", "beta2", "weight_decay",
            "lr2", "radius", "seed", "final_val_loss", "diverged", "eval_steps", "val_loss", "train_seconds",
            "ms_per_step", "wall_seconds", "threads", "workers", "load_start", "load_end", "cpu", "commit",
            "corpus_file", "started_utc");
    /** The results file's name in the results folder. */
    static final String FILE = "runs.csv";

    private SecondCsv() {
    }

    /**
     * The rows of a file that hold finished runs, and the lines that do not.
     *
     * @param results      the runs, in the file's order
     * @param skippedLines the 1-based numbers of the lines that are not complete rows
     */
    record Contents(List<SecondResult> results, List<Integer> skippedLines) {
        /**
         * The final validation losses by cell key, NaN for a run that diverged, as {@link SecondPlan#pending}
         * takes them; a cell written twice counts once, its first row.
         */
        Map<String, Double> finals() {
            return ResultsFile.firstByKey(results, r -> r.cell().key(), SecondResult::finalValLoss);
        }

        /** The finished runs' cells by key; a cell written twice counts once. */
        Map<String, SecondCell> cells() {
            return ResultsFile.firstByKey(results, r -> r.cell().key(), SecondResult::cell);
        }
    }

    /**
     * Appends a finished run; creates the file with its header if it does not exist.
     *
     * @param csv    the file
     * @param result the run
     * @throws DataError naming the file, if it cannot be written
     */
    static void append(Path csv, SecondResult result) {
        ResultsFile.append(csv, HEADER, row(result));
    }

    /**
     * Reads the finished runs of a results file.
     *
     * @param csv the file
     * @return the runs and the lines skipped; empty if the file does not exist
     * @throws DataError naming the file, if it cannot be read or its header is not this study's
     */
    static Contents read(Path csv) {
        ResultsFile.Rows<SecondResult> rows = ResultsFile.read(csv, HEADER, "a second-study results file's",
                SecondCsv::parse);
        return new Contents(rows.rows(), rows.skippedLines());
    }

    /** A row of the file. */
    static String row(SecondResult r) {
        SecondCell c = r.cell();
        return String.join(",", c.arm().id(), c.corpus(), Integer.toString(c.steps()), Double.toString(c.adamwLr()),
                Double.toString(c.beta2()), Double.toString(c.weightDecay()), Double.toString(c.lr2()),
                Double.toString(c.radius()), Long.toString(c.seed()), ResultsFile.runColumns(r, r.corpusFile()));
    }

    /**
     * A row read back.
     *
     * @param line the line
     * @return the run
     * @throws IllegalArgumentException if a column is missing or does not parse, or the curve does not fit the cell
     */
    static SecondResult parse(String line) {
        String[] f = line.split(",", -1);
        if (f.length != HEADER.size()) {
            throw new IllegalArgumentException("has " + f.length + " columns, expected " + HEADER.size());
        }
        SecondCell cell = new SecondCell(SecondArm.of(f[0]), f[1], Integer.parseInt(f[2]), Double.parseDouble(f[3]),
                Double.parseDouble(f[4]), Double.parseDouble(f[5]), Double.parseDouble(f[6]),
                Double.parseDouble(f[7]), Long.parseLong(f[8]));
        ResultsFile.RunColumns run = ResultsFile.runColumns(f, 9);
        int[] steps = run.evalSteps();
        if (steps[steps.length - 1] > cell.steps()) {
            throw new IllegalArgumentException("the last evaluation step " + steps[steps.length - 1]
                    + " is past the cell's " + cell.steps() + " steps");
        }
        try {
            // The last column: a row cut inside it has every other column, and only this check refuses it.
            java.time.Instant.parse(run.startedUtc());
        } catch (java.time.format.DateTimeParseException e) {
            throw new IllegalArgumentException("started_utc must be an ISO-8601 instant, got '" + run.startedUtc()
                    + "'", e);
        }
        return new SecondResult(cell, steps, run.valLoss(), run.trainSeconds(), run.diverged(), run.wallSeconds(),
                run.threads(), run.workers(), run.loadStart(), run.loadEnd(), run.machine(), run.corpusFile(),
                run.startedUtc());
    }
}
