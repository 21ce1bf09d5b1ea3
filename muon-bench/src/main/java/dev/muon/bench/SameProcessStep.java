package dev.muon.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * How much faster is our step than PyTorch's formulas on the same libtorch, with both seeing the same neighbours?
 * Our {@code MuonAdamW} step ({@link MuonStepBenchmark}'s {@code muon-adamw} entry: the GPT-2-small-width set, 24
 * matrices on Muon with the {@code AUTO} kernels and same-shape batching on, 43 tensors on libtorch's AdamW) and
 * {@link TorchReferenceStep} (PyTorch's {@code torch.optim.Muon} step written with libtorch's ops, and libtorch's
 * AdamW, over an identical copy of the set: same seed, same gradients) stepped alternately, call by call, in one
 * process; the order alternates from pair to pair, so that neither side always follows the other.
 *
 * <p>Each run is {@code --steps} pairs after the warm-up; per run it prints both sides' median step and the ratio of
 * the medians (reference / ours: above 1 is faster than PyTorch's formulas), then the median and the range of the
 * runs' ratios. The machine's load moves both sides of a pair alike, which is what makes this ratio steadier than one
 * taken between processes run minutes apart (the PyTorch peer's); it does not replace that one, which is what users
 * compare against. {@code --out} writes every step's time as JSON ({@code muon-bench/peer/ratios.py} reads it),
 * with what the kernel says the step lost to others ({@link StolenTime}: the CPUs' steal time and our threads'
 * run-queue wait), which tells a slow step the host caused from one of ours.
 *
 * <p>How to run ({@code muon-bench/peer/compare.sh} runs it in every run, in our side's environment):
 * <pre>
 * OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 java -cp muon-bench/target/benchmarks.jar \
 *     dev.muon.bench.SameProcessStep --dtype float32 --dtype bfloat16 --runs 3 --steps 6 --out same-process.json
 * </pre>
 */
@Command(name = "SameProcessStep", mixinStandardHelpOptions = true,
        description = "Our MuonAdamW step against torch.optim.Muon's formulas on the same libtorch, interleaved.")
public final class SameProcessStep implements Callable<Integer> {
    @Option(names = "--dtype", paramLabel = "DTYPE", description = "the Newton-Schulz dtype, float32 or bfloat16; "
            + "repeat for both (default: both)")
    List<String> dtypes = new ArrayList<>();

    @Option(names = "--runs", defaultValue = "3", description = "runs per dtype (default: ${DEFAULT-VALUE})")
    int runs;

    @Option(names = "--steps", defaultValue = "6", description = "timed pairs of steps per run (default: "
            + "${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--warmup", defaultValue = "2", description = "untimed pairs before the runs (default: "
            + "${DEFAULT-VALUE})")
    int warmup;

    @Option(names = "--out", paramLabel = "JSON", description = "where to write every step's time")
    Path out;

    /**
     * Parses the command line and measures.
     *
     * @param args see {@code --help}
     */
    public static void main(String[] args) {
        TorchNatives.extract();
        System.exit(new CommandLine(new SameProcessStep()).execute(args));
    }

    @Override
    public Integer call() throws IOException {
        if (runs < 1 || steps < 1 || warmup < 0) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--runs and --steps must be >= 1 and "
                    + "--warmup >= 0, got " + runs + ", " + steps + " and " + warmup);
        }
        List<String> chosen = dtypes.isEmpty() ? List.of("float32", "bfloat16") : dtypes;
        System.out.println("# libtorch intra-op threads: " + torch.get_num_threads() + ", OMP_WAIT_POLICY="
                + System.getenv("OMP_WAIT_POLICY") + ", " + CpuCapabilities.summary().replace('\n', ','));
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("threads", torch.get_num_threads());
        results.put("omp_wait_policy", String.valueOf(System.getenv("OMP_WAIT_POLICY")));
        results.put("capabilities", CpuCapabilities.summary());
        Map<String, Object> byDtype = new LinkedHashMap<>();
        for (String dtype : chosen) {
            byDtype.put(dtype, measure(NsDtype.precisionOf("--dtype", dtype)));
        }
        results.put("step", byDtype);
        if (out != null) {
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(out.toFile(), results);
        }
        return 0;
    }

    private static String dtypeName(NsPrecision precision) {
        return precision.name().toLowerCase(Locale.ROOT);
    }

    /** The two steps of one dtype: per run, both sides' times and their medians' ratio. */
    private Map<String, Object> measure(NsPrecision precision) {
        try (PointerScope scope = new PointerScope()) {
            MuonConfig config = GptStepSettings.muonSide(precision);
            List<Tensor> hidden = new ArrayList<>();
            List<Tensor> rest = new ArrayList<>();
            Map<String, Tensor> named = new LinkedHashMap<>();
            torch.manual_seed(0);
            MuonStepBenchmark.gpt2SmallWidth(hidden, rest, named);
            MuonAdamW ours = MuonAdamW.builder(named).muon(config).outputLayerOnAdamW(false).build();
            List<Tensor> referenceHidden = new ArrayList<>();
            List<Tensor> referenceRest = new ArrayList<>();
            torch.manual_seed(0);
            MuonStepBenchmark.gpt2SmallWidth(referenceHidden, referenceRest, new LinkedHashMap<>());
            // libtorch's AdamW defaults, which are MuonAdamW's (AdamWConfig.defaults()) and torch.optim.AdamW's.
            TorchReferenceStep reference = new TorchReferenceStep(referenceHidden, config, referenceRest,
                    new AdamWOptions(1e-3));
            Runnable[] sides = {ours::step, reference::step};
            for (int i = 0; i < warmup; i++) {
                timePair(sides, i, new StolenTime[2]);
            }
            List<Map<String, Object>> perRun = new ArrayList<>();
            double[] ratios = new double[runs];
            for (int run = 0; run < runs; run++) {
                double[][] ms = new double[2][steps];
                double[][] steal = new double[2][steps];
                double[][] wait = new double[2][steps];
                double[][] faults = new double[2][steps];
                for (int i = 0; i < steps; i++) {
                    StolenTime[] lost = new StolenTime[2];
                    double[] pair = timePair(sides, i, lost);
                    for (int side = 0; side < 2; side++) {
                        ms[side][i] = pair[side];
                        steal[side][i] = lost[side].stealMs();
                        wait[side][i] = lost[side].runQueueWaitMs();
                        faults[side][i] = lost[side].minorFaults();
                    }
                }
                StepSpread oursSpread = StepSpread.of(ms[0]);
                StepSpread referenceSpread = StepSpread.of(ms[1]);
                double oursMedian = oursSpread.median();
                double referenceMedian = referenceSpread.median();
                ratios[run] = referenceMedian / oursMedian;
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("ours_ms", ms[0]);
                entry.put("reference_ms", ms[1]);
                // What the kernel says each step lost to others (StolenTime): the control with no code of ours.
                entry.put("ours_steal_ms", steal[0]);
                entry.put("reference_steal_ms", steal[1]);
                entry.put("ours_runqueue_wait_ms", wait[0]);
                entry.put("reference_runqueue_wait_ms", wait[1]);
                entry.put("ours_minor_faults", faults[0]);
                entry.put("reference_minor_faults", faults[1]);
                entry.put("ours_median_ms", oursMedian);
                entry.put("reference_median_ms", referenceMedian);
                spread(entry, "ours", oursSpread);
                spread(entry, "reference", referenceSpread);
                entry.put("ratio", ratios[run]);
                perRun.add(entry);
                System.out.println(String.format(Locale.ROOT, "%s run %d: ours %.1f ms, torch.optim.Muon's formulas "
                        + "%.1f ms (medians of %d), reference / ours %.3f", dtypeName(precision), run + 1, oursMedian,
                        referenceMedian, steps, ratios[run]));
                System.out.println(String.format(Locale.ROOT, "%s run %d: ours %s; reference %s",
                        dtypeName(precision), run + 1, oursSpread, referenceSpread));
            }
            double[] sorted = ratios.clone();
            Arrays.sort(sorted);
            double median = Median.ofSorted(sorted);
            System.out.println(String.format(Locale.ROOT, "%s: reference / ours %.3f (median of %d runs; %.3f to "
                    + "%.3f)", dtypeName(precision), median, runs, sorted[0], sorted[sorted.length - 1]));
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("runs", perRun);
            result.put("ratio_median", median);
            result.put("ratio_min", sorted[0]);
            result.put("ratio_max", sorted[sorted.length - 1]);
            return result;
        }
    }

    /** A side's percentiles and slowest step in a run's entry: {@code <side>_p90_ms}, {@code _p99_ms}, {@code _max_ms}. */
    private static void spread(Map<String, Object> entry, String side, StepSpread spread) {
        entry.put(side + "_p90_ms", spread.p90());
        entry.put(side + "_p99_ms", spread.p99());
        entry.put(side + "_max_ms", spread.max());
    }

    /**
     * One step of each side, ms each; pair {@code i} runs ours first when even, the reference first when odd. Each
     * side's {@link StolenTime} over its step goes into {@code lost}; reading it (a few files of {@code /proc}) is
     * outside the timed interval.
     */
    private static double[] timePair(Runnable[] sides, int i, StolenTime[] lost) {
        double[] ms = new double[2];
        for (int j = 0; j < 2; j++) {
            int side = (i + j) % 2;
            StolenTime before = StolenTime.now();
            long t0 = System.nanoTime();
            try (PointerScope call = new PointerScope()) {
                sides[side].run();
            }
            ms[side] = (System.nanoTime() - t0) / 1e6;
            lost[side] = StolenTime.now().since(before);
        }
        return ms;
    }
}
