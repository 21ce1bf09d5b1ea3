package dev.muon.examples;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * Redraws an example's figure from the CSVs of a run, without training: how the figures in {@code docs/} are made
 * again from {@code docs/data/} after a change to the drawing (one command per figure in
 * {@code docs/examples.md}, "Figures"). Training runs write their own figures; this only redraws.
 */
@Command(name = "Replot", mixinStandardHelpOptions = true, subcommands = {Replot.FashionMnistFigure.class,
        Replot.TinyGptFigure.class},
        description = "Redraws an example's figure from the CSVs of a run.")
public final class Replot implements Callable<Integer> {
    /**
     * Redraws the figure named by the sub-command.
     *
     * @param args {@code fashion-mnist ...} or {@code tinygpt ...}; see {@code --help}
     */
    public static void main(String[] args) {
        ExampleCli.main(new Replot(), args);
    }

    @Override
    public Integer call() {
        throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                "name the figure: fashion-mnist or tinygpt");
    }

    /** FashionMnist's three panels of one model. */
    @Command(name = "fashion-mnist", mixinStandardHelpOptions = true,
            description = "Redraws a FashionMnist figure of one model from its epochs, steps and summary CSVs.")
    static final class FashionMnistFigure implements Callable<Integer> {
        @Option(names = "--epochs", required = true, paramLabel = "CSV", description = "the per-epoch CSV")
        Path epochs;
        @Option(names = "--steps", required = true, paramLabel = "CSV", description = "the per-step CSV")
        Path steps;
        @Option(names = "--summary", paramLabel = "CSV", description = "the summary CSV (the optimizer state)")
        Path summary;
        @Option(names = "--model", defaultValue = "mlp", description = "mlp or cnn (default: ${DEFAULT-VALUE})")
        String model;
        @Mixin
        FigureOptions figure = new FigureOptions();

        @Override
        public Integer call() throws IOException {
            List<FashionMnist.Result> results = RunTables.read(epochs, steps, summary, model);
            double baseLr = results.stream().mapToDouble(FashionMnist.Result::lr).min().orElseThrow();
            int epochCount = results.get(0).epochs().size();
            long stepsPerEpoch = results.get(0).steps().size() / epochCount;
            figure.write(p -> ComparisonPlot.write(p, "Fashion-MNIST, " + FashionMnist.modelTitle(model), results,
                    baseLr, stepsPerEpoch, figure.secondsNote));
            return 0;
        }
    }

    /** TinyGpt's two panels. */
    @Command(name = "tinygpt", mixinStandardHelpOptions = true,
            description = "Redraws a TinyGpt figure from its curves CSV.")
    static final class TinyGptFigure implements Callable<Integer> {
        @Option(names = "--csv", required = true, paramLabel = "CSV", description = "the curves CSV")
        Path csv;
        @Option(names = "--title", defaultValue = "TinyGpt", description = "the figure's title")
        String title;
        @Mixin
        FigureOptions figure = new FigureOptions();

        @Override
        public Integer call() throws IOException {
            List<TinyGpt.Run> runs = TinyGptCurves.read(csv);
            figure.write(p -> CurvesFigure.write(runs, p, title, figure.secondsNote));
            return 0;
        }
    }

    /**
     * The options every figure takes, declared once so that the sub-commands cannot drift apart; declared last in
     * each sub-command, where they stood, so that picocli lists and reports them in the same order.
     */
    static final class FigureOptions {
        @Option(names = "--seconds-note", defaultValue = "", paramLabel = "TEXT",
                description = "what to say about the machine the seconds were measured on")
        String secondsNote;
        @Option(names = "--out", required = true, paramLabel = "PNG", description = "the figure to write")
        Path out;

        /** Draws into {@code --out}, its folder made first, and says where it went. */
        void write(Drawing drawing) {
            System.setProperty("java.awt.headless", "true");
            Path file = out.toAbsolutePath().normalize();
            try {
                Files.createDirectories(file.getParent());
                drawing.draw(file);
            } catch (IOException e) {
                throw new DataError(file + ": cannot write it (" + DataError.reason(e) + ")", e);
            }
            System.out.println("wrote " + file);
        }
    }

    /** Something that draws into a file. */
    private interface Drawing {
        void draw(Path png) throws IOException;
    }
}
