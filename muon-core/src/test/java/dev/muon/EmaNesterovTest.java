package dev.muon;

import dev.muon.schedule.LibtorchOptimizer;
import dev.muon.schedule.TrainingOptimizer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link EmaNesterov} against the formula: exact against a float64 reference around SGD, bit for bit against the
 * formula applied by hand around Muon, MuonAdamW and libtorch's AdamW, and a save, load and continue equal to an
 * uninterrupted run bit for bit.
 */
class EmaNesterovTest {

    /** The lr the schedule gives step t: changes at every step, so β_t's scale is exercised. */
    private static double lrAt(long t, double base) {
        return base * (1.0 - 0.07 * t);
    }

    @Test
    void aroundSgd_matchesTheFloat64Formula_insideAndOutsideTheWindow() {
        try (PointerScope scope = new PointerScope()) {
            double lr0 = 0.1;
            double beta = 0.5;
            double gamma = 0.9;
            long prefill = 2;
            long rest = 6;
            int steps = 9;
            double[] x0 = {0.5, -1.25, 2.0, 0.75, -0.3, 1.1};
            double[] c = {1.0, 0.5, -0.5, 2.0, 0.0, -1.0};
            Tensor x = Tensor.create(x0.clone(), 6).requires_grad_(true);
            Tensor target = Tensor.create(c.clone(), 6);
            SGD sgd = new SGD(new TensorVector(x), new SGDOptions(lr0));
            EmaNesterovConfig config = new EmaNesterovConfig(beta, gamma, true, 0, prefill, rest);
            try (EmaNesterov opt = EmaNesterov.wrap(LibtorchOptimizer.of(sgd), Map.of("x", x), config)) {
                double[] theta = x0.clone();
                double[] m = new double[6];
                for (long t = 0; t < steps; t++) {
                    double lr = lrAt(t, lr0);
                    opt.setLr(0, lr);
                    opt.zeroGrad();
                    opt.lookahead();
                    // loss = ½‖x − c‖², so the gradient at the lookahead point y is y − c.
                    x.sub(target).pow(new Scalar(2.0)).sum().mul(new Scalar(0.5)).backward();
                    opt.step();

                    double betaT = t >= prefill && t < rest ? beta * (lr / lr0) : 0;
                    assertEquals(betaT, opt.lastLookahead(), 0, "β at step " + t);
                    for (int i = 0; i < 6; i++) {
                        double y = theta[i] + betaT * m[i];
                        double next = y - lr * (y - c[i]);
                        m[i] = gamma * m[i] + (1 - gamma) * (next - theta[i]);
                        theta[i] = next;
                    }
                    double[] got = values(x);
                    double[] gotM = values(opt.ema("x"));
                    for (int i = 0; i < 6; i++) {
                        assertEquals(theta[i], got[i], 1e-15, "θ[" + i + "] after step " + t);
                        assertEquals(m[i], gotM[i], 1e-15, "m[" + i + "] after step " + t);
                    }
                }
                assertEquals(steps, opt.stepCount());
            }
        }
    }

    @Test
    void unscaled_usesTheFixedStepSize() {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.ones(3).requires_grad_(true);
            SGD sgd = new SGD(new TensorVector(x), new SGDOptions(0.1));
            EmaNesterovConfig config = EmaNesterovConfig.defaults().withScaleByLr(false).withLookahead(0.3);
            try (EmaNesterov opt = EmaNesterov.wrap(LibtorchOptimizer.of(sgd), Map.of("x", x), config)) {
                opt.setLr(0, 0.05);
                opt.lookahead();
                assertEquals(0.3, opt.lastLookahead());
            }
        }
    }

    /** The inner optimizers of the issue, each made over its own copy of the same parameters. */
    private static TrainingOptimizer inner(String kind, List<Tensor> p) {
        return switch (kind) {
            case "Muon" -> Muon.of(p.subList(0, 2), MuonConfig.defaults().withLr(0.02));
            case "MuonAdamW" -> {
                StringTensorDict named = new StringTensorDict();
                named.insert("w1", new Tensor(p.get(0)));   // insert moves its argument
                named.insert("w2", new Tensor(p.get(1)));
                named.insert("b", new Tensor(p.get(2)));
                yield MuonAdamW.builder(named).build();
            }
            case "AdamW" -> LibtorchOptimizer.of(new AdamW(new TensorVector(p.get(0), p.get(1), p.get(2)),
                    new AdamWOptions(3e-3)));
            default -> throw new IllegalArgumentException(kind);
        };
    }

    private static List<Tensor> parameters() {
        return parameters(ScalarType.Float);
    }

    private static List<Tensor> parameters(ScalarType dtype) {
        torch.manual_seed(11);
        return List.of(torch.randn(8, 6).mul(new Scalar(0.3)).to(dtype).requires_grad_(true),
                torch.randn(6, 4).mul(new Scalar(0.3)).to(dtype).requires_grad_(true),
                torch.randn(4).mul(new Scalar(0.1)).to(dtype).requires_grad_(true));
    }

    private static List<Tensor> copies(List<Tensor> p) {
        List<Tensor> c = new ArrayList<>();
        for (Tensor t : p) {
            c.add(t.detach().clone().requires_grad_(true));
        }
        return c;
    }

    private static Map<String, Tensor> named(List<Tensor> p, boolean withBias) {
        Map<String, Tensor> m = new LinkedHashMap<>();
        m.put("w1", p.get(0));
        m.put("w2", p.get(1));
        if (withBias) {
            m.put("b", p.get(2));
        }
        return m;
    }

    private static void backward(List<Tensor> p, Tensor input) {
        Tensor out = input.matmul(p.get(0)).tanh().matmul(p.get(1)).add(p.get(2));
        out.pow(new Scalar(2.0)).mean().backward();
    }

    private static final EmaNesterovConfig CONFIG = new EmaNesterovConfig(0.6, 0.8, true, 0, 1, 5);

    /** In the parameter dtypes users train in: the EMA in the parameter's dtype, as the formula by hand keeps it. */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"Muon, Float", "MuonAdamW, Float", "AdamW, Float", "Muon, BFloat16", "MuonAdamW, BFloat16",
        "AdamW, BFloat16"})
    void aroundEachOptimizer_equalsTheFormulaAppliedByHand_bitForBit(String kind, ScalarType dtype) {
        try (PointerScope scope = new PointerScope()) {
            List<Tensor> a = parameters(dtype);
            List<Tensor> b = copies(a);
            torch.manual_seed(5);
            Tensor input = torch.randn(16, 8).to(dtype);
            boolean withBias = !kind.equals("Muon");
            TrainingOptimizer byHand = inner(kind, b);
            double lr0 = byHand.lr(0);
            List<Tensor> wrapped = new ArrayList<>(named(b, withBias).values());
            List<Tensor> m = new ArrayList<>();
            for (Tensor t : wrapped) {
                m.add(torch.zeros_like(t));
            }
            try (EmaNesterov opt = EmaNesterov.wrap(inner(kind, a), named(a, withBias), CONFIG)) {
                for (long t = 0; t < 7; t++) {
                    opt.setLr(0, lrAt(t, lr0));
                    opt.zeroGrad();
                    opt.lookahead();
                    backward(a, input);
                    opt.step();

                    byHand.setLr(0, lrAt(t, lr0));
                    byHand.zeroGrad();
                    double beta = CONFIG.looksAheadAt(t) ? CONFIG.lookahead() * (lrAt(t, lr0) / lr0) : 0;
                    List<Tensor> previous = new ArrayList<>();
                    try (var noGrad = new org.bytedeco.pytorch.NoGradGuard()) {
                        for (int i = 0; i < wrapped.size(); i++) {
                            previous.add(wrapped.get(i).detach().clone());
                            wrapped.get(i).add_(m.get(i), new Scalar(beta));
                        }
                    }
                    backward(b, input);
                    byHand.step();
                    try (var noGrad = new org.bytedeco.pytorch.NoGradGuard()) {
                        for (int i = 0; i < wrapped.size(); i++) {
                            m.get(i).lerp_(wrapped.get(i).sub(previous.get(i)), new Scalar(1 - CONFIG.ema()));
                        }
                    }
                }
                for (int i = 0; i < 3; i++) {
                    assertTrue(torch.equal(a.get(i), b.get(i)), kind + ": parameter " + i);
                }
                assertTrue(torch.equal(opt.ema("w1"), m.get(0)), kind + ": m of w1");
                assertEquals(dtype.value, opt.ema("w1").scalar_type().value, "the EMA keeps the parameter's dtype");
                assertTrue(opt.ema("w1").abs().sum().item_double() > 0, "m moved");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 3, 5})
    void saveLoadContinue_equalsAnUninterruptedRun_bitForBit(int stopAt, @TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            int steps = 8;
            List<Tensor> a = parameters();
            List<Tensor> b = copies(a);
            torch.manual_seed(5);
            Tensor input = torch.randn(16, 8);
            Function<List<Tensor>, MuonAdamW> make = p -> (MuonAdamW) inner("MuonAdamW", p);

            MuonAdamW innerA = make.apply(a);
            double lr0 = innerA.lr(0);
            try (innerA; EmaNesterov whole = EmaNesterov.wrap(innerA, named(a, true), CONFIG)) {
                for (long t = 0; t < steps; t++) {
                    train(whole, a, input, t, lr0);
                }
            }

            Path checkpoint = dir.resolve("optimizer.ckpt");
            Path lookahead = dir.resolve("ema-nesterov.safetensors");
            MuonAdamW first = make.apply(b);
            try (first; EmaNesterov opt = EmaNesterov.wrap(first, named(b, true), CONFIG)) {
                for (long t = 0; t < stopAt; t++) {
                    train(opt, b, input, t, lr0);
                }
                first.save(checkpoint);
                opt.save(lookahead);
            }
            List<Tensor> resumed = parameters();   // other values: the load restores them
            for (Tensor t : resumed) {
                try (var noGrad = new org.bytedeco.pytorch.NoGradGuard()) {
                    t.add_(torch.ones_like(t));
                }
            }
            MuonAdamW second = make.apply(resumed);
            try (second; EmaNesterov opt = EmaNesterov.wrap(second, named(resumed, true), CONFIG)) {
                second.load(checkpoint);
                opt.load(lookahead);
                assertEquals(stopAt, opt.stepCount());
                for (long t = stopAt; t < steps; t++) {
                    train(opt, resumed, input, t, lr0);
                }
            }
            for (int i = 0; i < 3; i++) {
                assertTrue(torch.equal(a.get(i), resumed.get(i)), "parameter " + i + " resumed at " + stopAt);
            }
        }
    }

    private static void train(EmaNesterov opt, List<Tensor> p, Tensor input, long t, double lr0) {
        opt.setLr(0, lrAt(t, lr0));
        opt.zeroGrad();
        opt.lookahead();
        backward(p, input);
        opt.step();
    }

    @Test
    void savedFile_holdsTheEmaBitForBit(@TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            List<Tensor> p = parameters();
            torch.manual_seed(5);
            Tensor input = torch.randn(16, 8);
            try (EmaNesterov opt = EmaNesterov.wrap(inner("AdamW", p), named(p, true), CONFIG)) {
                for (long t = 0; t < 3; t++) {
                    train(opt, p, input, t, 3e-3);
                }
                opt.save(dir.resolve("s"));
                var read = dev.muon.state.EmaNesterovStateFile.read(dir.resolve("s"));
                assertEquals(3, read.step());
                assertEquals(3e-3, read.referenceLr());
                assertEquals(List.of("w1", "w2", "b"), List.copyOf(read.ema().keySet()));
                assertTrue(torch.equal(read.ema().get("b"), opt.ema("b")));
                assertArrayEquals(new long[] {6, 4}, read.ema().get("w2").shape());
            }
        }
    }

    private static double[] values(Tensor t) {
        Tensor flat = t.detach().to(torch.ScalarType.Double).contiguous().reshape(-1);
        double[] out = new double[(int) flat.numel()];
        for (int i = 0; i < out.length; i++) {
            out[i] = flat.get(i).item_double();
        }
        return out;
    }
}
