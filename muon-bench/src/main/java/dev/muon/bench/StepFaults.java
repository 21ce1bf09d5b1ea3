package dev.muon.bench;

import dev.muon.Muon;
import dev.muon.MuonAdamW;
import dev.muon.MuonConfig;
import dev.muon.internal.TorchNatives;
import dev.muon.orthogonalize.NsPrecision;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Whose page faults? Steps one optimizer over {@link MuonStepBenchmark}'s GPT-2-small-width set (its shapes and
 * gradients) and prints, for each of ten steps after three untimed ones, this process's minor page faults during the
 * step ({@link StolenTime}) and the step's time, as {@code faults/ms}. One optimizer per JVM, so that no other
 * optimizer's allocations share the heap. Fault counts do not depend on the machine's load; the times do, and are
 * not benchmark numbers.
 *
 * <pre>
 * java -cp muon-bench/target/benchmarks.jar dev.muon.bench.StepFaults OPTIMIZER [float32|bfloat16]
 * </pre>
 *
 * {@code OPTIMIZER}: {@code muon-adamw} ({@code MuonStepBenchmark}'s entry), {@code muon-only} (Muon over the 24
 * matrices), {@code adamw-rest} (libtorch's AdamW over the other 43 tensors), {@code adamw} (libtorch's AdamW over
 * all 67) or {@code adamw-side} ({@code MuonAdamW} with all 67 on its AdamW side). The dtype is the Newton–Schulz
 * precision (float32 by default).
 */
public final class StepFaults {
    static {
        // Before anything here loads libtorch: see TorchNatives.
        TorchNatives.extract();
    }

    static final List<String> OPTIMIZERS = List.of("muon-adamw", "muon-only", "adamw-rest", "adamw", "adamw-side");
    private static final int WARMUP = 3;
    private static final int STEPS = 10;

    private StepFaults() {
    }

    /**
     * @param args the optimizer, and optionally the Newton–Schulz dtype
     */
    public static void main(String[] args) {
        if (args.length < 1 || args.length > 2) {
            throw new IllegalArgumentException("arguments must be OPTIMIZER and optionally float32 or bfloat16, got "
                    + args.length + " arguments");
        }
        NsPrecision precision = args.length == 1 ? NsPrecision.FLOAT32
                : NsDtype.precisionOf("the dtype", args[1]);
        checkOptimizer(args[0]);
        try (PointerScope scope = new PointerScope()) {
            List<Tensor> hidden = new ArrayList<>();
            List<Tensor> rest = new ArrayList<>();
            Map<String, Tensor> named = new LinkedHashMap<>();
            torch.manual_seed(0);
            MuonStepBenchmark.gpt2SmallWidth(hidden, rest, named);
            Runnable step = optimizer(args[0], precision, hidden, rest, named);
            for (int i = 0; i < WARMUP; i++) {
                step.run();
            }
            StringBuilder line = new StringBuilder(args[0] + " " + precision + ":");
            for (int i = 0; i < STEPS; i++) {
                StolenTime before = StolenTime.now();
                long start = System.nanoTime();
                step.run();
                double ms = (System.nanoTime() - start) / 1e6;
                line.append(String.format(Locale.ROOT, " %.0f/%.0fms",
                        StolenTime.now().since(before).minorFaults(), ms));
            }
            System.out.println(line);
        }
    }

    static void checkOptimizer(String name) {
        if (!OPTIMIZERS.contains(name)) {
            throw new IllegalArgumentException("OPTIMIZER must be one of " + OPTIMIZERS + ", got '" + name + "'");
        }
    }

    private static Runnable optimizer(String name, NsPrecision precision, List<Tensor> hidden, List<Tensor> rest,
                                      Map<String, Tensor> named) {
        MuonConfig config = GptStepSettings.muonSide(precision);
        List<Tensor> all = new ArrayList<>(hidden);
        all.addAll(rest);
        return switch (name) {
            case "muon-adamw" -> MuonAdamW.builder(named).muon(config).outputLayerOnAdamW(false).build()::step;
            case "muon-only" -> Muon.of(hidden, config)::step;
            case "adamw-rest" -> new AdamW(new TensorVector(rest.toArray(new Tensor[0])), new AdamWOptions(1e-3))::step;
            case "adamw" -> new AdamW(new TensorVector(all.toArray(new Tensor[0])), new AdamWOptions(1e-3))::step;
            default -> MuonAdamW.builder(named).muonWhen((n, p) -> false).allowEmptyMuon(true).build()::step;
        };
    }
}
