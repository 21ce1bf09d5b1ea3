package dev.muon.examples;

import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVPrinter;
import org.apache.commons.csv.CSVRecord;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@link TinyGpt}'s validation curves as a CSV with one row per evaluation, written and read back, and as a figure
 * ({@link CurvesFigure}).
 */
final class TinyGptCurves {
    private TinyGptCurves() {
    }

    /**
     * Writes the CSV and the PNG; their folders are created.
     *
     * @param runs the runs to draw
     * @param csv  the CSV file
     * @param png  the PNG file
     * @param title       the figure's title
     * @param secondsNote what to say about the machine the seconds were measured on, or empty
     * @return the two files, absolute
     * @throws DataError naming the file, if one cannot be written
     */
    static List<Path> write(List<TinyGpt.Run> runs, Path csv, Path png, String title, String secondsNote) {
        // Headless, so that the example also draws on a server or in CI without a display.
        System.setProperty("java.awt.headless", "true");
        Path csvFile = csv.toAbsolutePath().normalize();
        Path pngFile = png.toAbsolutePath().normalize();
        Path current = csvFile;
        try {
            Files.createDirectories(csvFile.getParent());
            try (CSVPrinter out = new CSVPrinter(Files.newBufferedWriter(csvFile),
                    CSVFormat.DEFAULT.builder().setHeader("optimizer", "step", "train_seconds", "train_loss",
                            "val_loss").get())) {
                for (TinyGpt.Run run : runs) {
                    for (TinyGpt.Point p : run.points()) {
                        out.printRecord(run.name(), p.step(), String.format(Locale.ROOT, "%.3f", p.seconds()),
                                String.format(Locale.ROOT, "%.5f", p.trainLoss()),
                                String.format(Locale.ROOT, "%.5f", p.valLoss()));
                    }
                }
            }
            current = pngFile;
            Files.createDirectories(pngFile.getParent());
            CurvesFigure.write(runs, pngFile, title, secondsNote);
        } catch (IOException e) {
            throw new DataError(current + ": cannot write it (" + DataError.reason(e) + ")", e);
        }
        return List.of(csvFile, pngFile);
    }

    /**
     * Reads the curves back from a CSV that {@link #write} wrote, for redrawing a figure.
     *
     * @param csv the file
     * @return the runs, in the file's order
     * @throws DataError naming the file, if it cannot be read or is not such a CSV
     */
    static List<TinyGpt.Run> read(Path csv) {
        java.util.Map<String, List<TinyGpt.Point>> points = new java.util.LinkedHashMap<>();
        try (CSVParser parser = CSVParser.parse(csv, java.nio.charset.StandardCharsets.UTF_8,
                CSVFormat.DEFAULT.builder().setHeader().setSkipHeaderRecord(true).get())) {
            for (CSVRecord r : parser) {
                points.computeIfAbsent(r.get("optimizer"), k -> new ArrayList<>()).add(new TinyGpt.Point(
                        Integer.parseInt(r.get("step")), Double.parseDouble(r.get("train_seconds")),
                        Double.parseDouble(r.get("train_loss")), Double.parseDouble(r.get("val_loss"))));
            }
        } catch (IOException e) {
            throw new DataError(csv + ": cannot read it (" + DataError.reason(e) + ")", e);
        } catch (IllegalArgumentException e) {
            throw new DataError(csv + ": not a TinyGpt curves CSV (" + e.getMessage() + ")", e);
        }
        if (points.size() != 2) {
            throw new DataError(csv + ": holds " + points.size() + " optimizers " + points.keySet()
                    + ", a TinyGpt run has 2");
        }
        List<TinyGpt.Run> runs = new ArrayList<>();
        points.forEach((name, list) -> runs.add(new TinyGpt.Run(name, List.copyOf(list))));
        return runs;
    }
}
