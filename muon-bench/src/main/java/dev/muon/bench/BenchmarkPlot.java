package dev.muon.bench;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * Draws {@code docs/benchmarks.md}'s plot from a JMH JSON result of {@link NewtonSchulzBenchmark}: for each shape,
 * one bar per variant showing its time relative to the {@code gemm} floor of the same shape and dtype (shapes span
 * two orders of magnitude in time, so ratios read better than milliseconds), one chart per dtype ({@link RatioBars}:
 * no bar for a variant not run at a shape). Error bars are JMH's 99.9% confidence intervals, the bar's and its
 * floor's combined in quadrature, clipped at 0; some exceed the bar itself on a shared machine, which is why they
 * are drawn.
 *
 * <p>With {@code --peer}, a PyTorch bar is added at {@code --peer-shape}: the peer's median over the {@code gemm}
 * floor of {@code --peer-floor}, a JMH file measured in the same sitting as the peer (a floor from another sitting
 * would mix two machines' loads). Given several peer files (PyTorch in two OpenMP settings), each dtype takes the
 * faster; its error bar is half the peer's min-to-max range.
 *
 * <p>How to run ({@code --help} lists the options):
 * <pre>
 * java -Djava.awt.headless=true -cp muon-bench/target/benchmarks.jar dev.muon.bench.BenchmarkPlot \
 *     docs/data/ns.json docs/ns-benchmark --peer docs/data/peer-ns-final-default.json \
 *     --peer docs/data/peer-ns-final-passive.json --peer-floor docs/data/ns-1024x4096-final.json
 * </pre>
 * writes {@code docs/ns-benchmark-float32.png} and {@code -bfloat16.png}.
 */
@Command(name = "BenchmarkPlot", mixinStandardHelpOptions = true,
        description = "Draws Newton-Schulz benchmark ratios over the GEMM floor, with error bars, one PNG per dtype.")
public final class BenchmarkPlot implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "JMH_JSON", description = "JMH JSON result of NewtonSchulzBenchmark")
    Path jmh;

    @Parameters(index = "1", paramLabel = "PREFIX", description = "output prefix; writes PREFIX-<dtype>.png")
    String prefix;

    @Option(names = "--peer", paramLabel = "JSON", description = "PyTorch peer timings (pytorch_peer.py); repeat "
            + "for several environments, the faster counts")
    List<Path> peers = new ArrayList<>();

    @Option(names = "--peer-floor", paramLabel = "JMH_JSON",
            description = "JMH result from the peer's sitting, whose gemm floor normalises the peer (default: JMH_JSON)")
    Path peerFloor;

    @Option(names = "--peer-shape", defaultValue = "1024x4096",
            description = "the shape the peer measured (default: ${DEFAULT-VALUE})")
    String peerShape;

    @Option(names = "--peer-label", defaultValue = "PyTorch 1.13 eager",
            description = "legend of the peer's bar (default: ${DEFAULT-VALUE})")
    String peerLabel;

    /**
     * Parses the command line and draws the plots.
     *
     * @param args see {@code --help}
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new BenchmarkPlot()).execute(args));
    }

    @Override
    public Integer call() throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<NsScores.Score> scores = NsScores.readJmh(jmh);
        Map<String, Map<String, NsScores.Ratio>> peerBars = peerBars();
        Set<String> dtypes = new LinkedHashSet<>();
        scores.forEach(s -> dtypes.add(s.dtype()));
        for (String dtype : dtypes) {
            Map<String, Map<String, NsScores.Ratio>> bars = bars(scores, dtype);
            if (peerBars.containsKey(dtype)) {
                bars.put(peerLabel, peerBars.get(dtype));
            }
            Path out = Path.of(prefix + "-" + dtype + ".png").toAbsolutePath();
            RatioBars.write(out, "Newton-Schulz, 5 steps, " + dtype + ": time / its GEMM floor (lower is better;"
                    + " error bars: 99.9% CI)", note(), shapes(scores, dtype), bars);
            System.out.println("wrote " + out);
        }
        return 0;
    }

    /** Where the bars come from: the file names, so that a figure says which sitting it shows. */
    private String note() {
        String note = "JMH: " + jmh.getFileName();
        if (!peers.isEmpty()) {
            note += "; " + peerLabel + ": " + String.join(", ", peers.stream().map(p -> p.getFileName().toString())
                    .toList()) + " over the floor of " + (peerFloor == null ? jmh : peerFloor).getFileName();
        }
        return note;
    }

    /** Variant, then shape, to its ratio over the floor. */
    static Map<String, Map<String, NsScores.Ratio>> bars(List<NsScores.Score> scores, String dtype) {
        Map<String, Map<String, NsScores.Ratio>> bars = new LinkedHashMap<>();
        for (NsScores.Score s : scores) {
            if (s.dtype().equals(dtype)) {
                NsScores.Score floor = NsScores.floor(scores, dtype, s.shape());
                // The floor over itself is 1 with the floor's own margin, not that margin counted twice.
                NsScores.Ratio ratio = s.equals(floor) ? new NsScores.Ratio(1, s.error() / s.ms())
                        : NsScores.Ratio.of(s.ms(), s.error(), floor);
                bars.computeIfAbsent(s.variant(), k -> new LinkedHashMap<>()).put(s.shape(), ratio);
            }
        }
        return bars;
    }

    /** Dtype to the peer's one bar at {@link #peerShape}, from the faster of the peer files. */
    private Map<String, Map<String, NsScores.Ratio>> peerBars() throws IOException {
        Map<String, Map<String, NsScores.Ratio>> out = new LinkedHashMap<>();
        if (peers.isEmpty()) {
            return out;
        }
        List<NsScores.Score> floors = NsScores.readJmh(peerFloor == null ? jmh : peerFloor);
        Map<String, NsScores.Peer> fastest = new LinkedHashMap<>();
        for (Path file : peers) {
            NsScores.readPeer(file, peerShape).forEach((dtype, p) -> fastest.merge(dtype, p,
                    (a, b) -> a.median() <= b.median() ? a : b));
        }
        fastest.forEach((dtype, p) -> out.put(dtype, Map.of(peerShape,
                NsScores.Ratio.of(p.median(), p.error(), NsScores.floor(floors, dtype, peerShape)))));
        return out;
    }

    private static List<String> shapes(List<NsScores.Score> scores, String dtype) {
        Set<String> shapes = new LinkedHashSet<>();
        for (NsScores.Score s : scores) {
            if (s.dtype().equals(dtype) && s.variant().equals("gemm")) {
                shapes.add(s.shape());
            }
        }
        return new ArrayList<>(shapes);
    }
}
