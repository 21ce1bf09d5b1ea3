package dev.muon.examples;

import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVPrinter;
import org.apache.commons.csv.CSVRecord;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@link FashionMnist}'s results as CSV files (through commons-csv) and as the printed table: per epoch, per step, and
 * a summary over seeds of each model, optimizer and learning rate.
 */
final class RunTables {
    private RunTables() {
    }

    /**
     * The seeds of one configuration, summarised at the last epoch.
     *
     * @param model        the model
     * @param optimizer    the optimizer
     * @param lrMultiplier the lr as a multiple of the base lr
     * @param lr           the AdamW lr
     * @param seeds        how many seeds
     * @param accuracy     mean test accuracy
     * @param accuracySd   its sample standard deviation (0 for one seed)
     * @param testLoss     mean test loss
     * @param trainLoss    mean training loss over the last epoch
     * @param seconds      mean training seconds
     * @param stateBytes   optimizer state bytes
     */
    record Summary(String model, String optimizer, double lrMultiplier, double lr, int seeds, double accuracy,
                   double accuracySd, double testLoss, double trainLoss, double seconds, long stateBytes) {
    }

    static void writeEpochs(Path csv, List<FashionMnist.Result> results) throws IOException {
        try (Writer w = Files.newBufferedWriter(csv, StandardCharsets.UTF_8);
             CSVPrinter p = new CSVPrinter(w, CSVFormat.DEFAULT.builder().setHeader("model", "optimizer", "lr",
                     "seed", "epoch", "seconds", "test_accuracy", "test_loss", "train_loss").get())) {
            for (FashionMnist.Result r : results) {
                for (FashionMnist.EpochPoint e : r.epochs()) {
                    p.printRecord(r.model(), r.optimizer(), r.lr(), r.seed(), e.epoch(), round(e.seconds(), 3),
                            round(e.accuracy(), 4), round(e.testLoss(), 4), round(e.trainLoss(), 4));
                }
            }
        }
    }

    static void writeSteps(Path csv, List<FashionMnist.Result> results) throws IOException {
        try (Writer w = Files.newBufferedWriter(csv, StandardCharsets.UTF_8);
             CSVPrinter p = new CSVPrinter(w, CSVFormat.DEFAULT.builder().setHeader("model", "optimizer", "lr",
                     "seed", "step", "loss").get())) {
            for (FashionMnist.Result r : results) {
                for (int i = 0; i < r.steps().size(); i++) {
                    p.printRecord(r.model(), r.optimizer(), r.lr(), r.seed(), i + 1, round(r.steps().get(i), 5));
                }
            }
        }
    }

    static void writeSummary(Path csv, List<Summary> summary) throws IOException {
        try (Writer w = Files.newBufferedWriter(csv, StandardCharsets.UTF_8);
             CSVPrinter p = new CSVPrinter(w, CSVFormat.DEFAULT.builder().setHeader("model", "optimizer",
                     "lr_multiplier", "lr", "seeds", "test_accuracy_mean", "test_accuracy_sd", "test_loss_mean",
                     "train_loss_mean", "seconds_mean", "optimizer_state_bytes").get())) {
            for (Summary s : summary) {
                p.printRecord(s.model(), s.optimizer(), s.lrMultiplier(), s.lr(), s.seeds(), round(s.accuracy(), 4),
                        round(s.accuracySd(), 4), round(s.testLoss(), 4), round(s.trainLoss(), 4),
                        round(s.seconds(), 1), s.stateBytes());
            }
        }
    }

    /**
     * One model's runs read back from the CSVs that {@link #writeEpochs}, {@link #writeSteps} and
     * {@link #writeSummary} wrote, for redrawing a figure.
     *
     * @param epochs  the per-epoch CSV
     * @param steps   the per-step CSV
     * @param summary the summary CSV, for the optimizer state, or null (the figure then says it was not recorded)
     * @param model   the model whose rows to keep
     * @return the runs, in the epochs file's order
     * @throws DataError naming the file, if one cannot be read, is not such a CSV, or lacks the model's steps
     */
    static List<FashionMnist.Result> read(Path epochs, Path steps, Path summary, String model) {
        Map<String, List<FashionMnist.EpochPoint>> points = new LinkedHashMap<>();
        Map<String, String[]> keys = new LinkedHashMap<>();
        forEachRow(epochs, model, r -> {
            String key = r.get("optimizer") + "|" + r.get("lr") + "|" + r.get("seed");
            keys.putIfAbsent(key, new String[] {r.get("optimizer"), r.get("lr"), r.get("seed")});
            points.computeIfAbsent(key, k -> new ArrayList<>()).add(new FashionMnist.EpochPoint(
                    Integer.parseInt(r.get("epoch")), Double.parseDouble(r.get("seconds")),
                    Double.parseDouble(r.get("test_accuracy")), Double.parseDouble(r.get("test_loss")),
                    Double.parseDouble(r.get("train_loss"))));
        });
        Map<String, List<Double>> losses = new LinkedHashMap<>();
        forEachRow(steps, model, r -> losses.computeIfAbsent(r.get("optimizer") + "|" + r.get("lr") + "|"
                + r.get("seed"), k -> new ArrayList<>()).add(Double.parseDouble(r.get("loss"))));
        Map<String, Long> state = new LinkedHashMap<>();
        if (summary != null) {
            forEachRow(summary, model, r -> state.put(r.get("optimizer") + "|" + r.get("lr"),
                    Long.parseLong(r.get("optimizer_state_bytes"))));
        }
        if (points.isEmpty()) {
            throw new DataError(epochs + ": no rows of model '" + model + "'");
        }
        List<FashionMnist.Result> results = new ArrayList<>();
        for (Map.Entry<String, String[]> e : keys.entrySet()) {
            String[] k = e.getValue();
            List<Double> ofRun = losses.get(e.getKey());
            if (ofRun == null) {
                throw new DataError(steps + ": no steps of " + model + ", " + k[0] + ", lr " + k[1] + ", seed "
                        + k[2] + ", which " + epochs + " has");
            }
            results.add(new FashionMnist.Result(model, k[0], Double.parseDouble(k[1]), Long.parseLong(k[2]),
                    points.get(e.getKey()), ofRun, state.getOrDefault(k[0] + "|" + k[1], 0L)));
        }
        return results;
    }

    private static void forEachRow(Path csv, String model, java.util.function.Consumer<CSVRecord> row) {
        try (CSVParser parser = CSVParser.parse(csv, StandardCharsets.UTF_8,
                CSVFormat.DEFAULT.builder().setHeader().setSkipHeaderRecord(true).get())) {
            for (CSVRecord r : parser) {
                if (r.get("model").equals(model)) {
                    row.accept(r);
                }
            }
        } catch (IOException e) {
            throw new DataError(csv + ": cannot read it (" + DataError.reason(e) + ")", e);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw new DataError(csv + ": not a FashionMnist CSV of this kind (" + e.getMessage() + ")", e);
        }
    }

    /** One row per model, optimizer and lr, in the order the runs were made. */
    static List<Summary> summarise(List<FashionMnist.Result> results, double baseLr) {
        Map<String, List<FashionMnist.Result>> groups = new LinkedHashMap<>();
        for (FashionMnist.Result r : results) {
            groups.computeIfAbsent(r.model() + "|" + r.optimizer() + "|" + r.lr(), k -> new ArrayList<>()).add(r);
        }
        List<Summary> out = new ArrayList<>();
        for (List<FashionMnist.Result> g : groups.values()) {
            FashionMnist.Result first = g.get(0);
            double[] acc = g.stream().mapToDouble(r -> r.last().accuracy()).toArray();
            out.add(new Summary(first.model(), first.optimizer(), first.lr() / baseLr, first.lr(), g.size(),
                    SampleStats.mean(acc), SampleStats.sd(acc),
                    g.stream().mapToDouble(r -> r.last().testLoss()).average().orElseThrow(),
                    g.stream().mapToDouble(r -> r.last().trainLoss()).average().orElseThrow(),
                    g.stream().mapToDouble(r -> r.last().seconds()).average().orElseThrow(), first.stateBytes()));
        }
        return out;
    }

    static String table(List<Summary> summary) {
        StringBuilder out = new StringBuilder();
        String format = "%-5s %-10s %6s %6s %20s %10s %10s %9s %14s%n";
        out.append(String.format(Locale.ROOT, format, "model", "optimizer", "lr", "seeds", "test accuracy",
                "test loss", "train loss", "seconds", "state B"));
        for (Summary s : summary) {
            out.append(String.format(Locale.ROOT, format, s.model(), s.optimizer(),
                    multiple(s.lrMultiplier()), s.seeds(),
                    String.format(Locale.ROOT, "%.2f%% ± %.2f", 100 * s.accuracy(), 100 * s.accuracySd()),
                    String.format(Locale.ROOT, "%.4f", s.testLoss()), String.format(Locale.ROOT, "%.4f", s.trainLoss()),
                    String.format(Locale.ROOT, "%.1f", s.seconds()), String.format(Locale.ROOT, "%,d", s.stateBytes())));
        }
        return out.toString();
    }

    /** A multiplier as people write it: {@code 1x}, {@code 3x}, {@code 0.5x}. */
    static String multiple(double m) {
        return new java.text.DecimalFormat("0.###", java.text.DecimalFormatSymbols.getInstance(Locale.ROOT)).format(m)
                + "x";
    }

    private static double round(double x, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(x * scale) / scale;
    }
}
