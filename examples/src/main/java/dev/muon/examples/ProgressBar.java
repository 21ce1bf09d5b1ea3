package dev.muon.examples;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A one-line progress bar for one epoch: steps done, the running mean loss and the throughput in images per
 * second. On a terminal it redraws in place; otherwise (a log file, Maven's exec) it prints only the finished
 * line, so that logs stay readable.
 */
final class ProgressBar {
    private static final int WIDTH = 30;

    private final PrintStream out;
    private final String label;
    private final int steps;
    private final int batch;
    private final boolean redraw;
    private final long start = System.nanoTime();
    private double lossSum;
    private int done;

    ProgressBar(PrintStream out, String label, int steps, int batch) {
        this.out = out;
        this.label = label;
        this.steps = steps;
        this.batch = batch;
        this.redraw = System.console() != null;
    }

    /** Records one step's loss; redraws about 50 times per epoch on a terminal. */
    void step(double loss) {
        lossSum += loss;
        done++;
        if (redraw && (done % Math.max(1, steps / 50) == 0 || done == steps)) {
            out.print('\r' + line());
            out.flush();
        }
    }

    /** Ends the line. */
    void finish() {
        out.println(redraw ? "" : line());
    }

    /** The mean loss over the epoch so far. */
    double meanLoss() {
        return done == 0 ? Double.NaN : lossSum / done;
    }

    private String line() {
        int filled = steps == 0 ? WIDTH : (int) ((long) WIDTH * done / steps);
        double seconds = (System.nanoTime() - start) / 1e9;
        return String.format(Locale.ROOT, "%-24s [%s%s] %4d/%d steps  loss %.4f  %7.0f img/s", label,
                "#".repeat(filled), ".".repeat(WIDTH - filled), done, steps, meanLoss(),
                seconds > 0 ? done * (double) batch / seconds : 0.0);
    }
}
