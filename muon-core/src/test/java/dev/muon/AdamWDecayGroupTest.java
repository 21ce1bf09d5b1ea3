package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code noWeightDecayBelow2D}: AdamW's 1-D and 0-D parameters in a second libtorch group without decay. */
@ExtendWith(NativeScopePerTest.class)
class AdamWDecayGroupTest {
    private static final double LR = 0.1;
    private static final double WD = 0.5;
    private static final double EPS = 1e-8;

    /** A Muon matrix, an embedding (2-D, AdamW by name), a bias and a scalar gain, in float64. */
    static Map<String, Tensor> model(long seed) {
        torch.manual_seed(seed);
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("embed.weight", torch.randn(6, 4).to(ScalarType.Double).requires_grad_(true));
        named.put("fc1.weight", torch.randn(4, 4).to(ScalarType.Double).requires_grad_(true));
        named.put("fc1.bias", torch.randn(4).to(ScalarType.Double).requires_grad_(true));
        named.put("gain", torch.randn(new long[0]).to(ScalarType.Double).requires_grad_(true));
        return named;
    }

    static MuonAdamW.Builder builder(Map<String, Tensor> named, boolean noDecay) {
        return MuonAdamW.builder(named).adamW(AdamWConfig.defaults().withLr(LR).withWeightDecay(WD).withEps(EPS))
                .noWeightDecayBelow2D(noDecay);
    }

    /** AdamW's first step: m̂ = g, v̂ = g², so the update is lr·g/(|g| + eps), after the decay factor. */
    static double[] firstStep(double[] p, double[] g, double lr, double decay) {
        double[] out = new double[p.length];
        for (int i = 0; i < p.length; i++) {
            out[i] = p[i] * (1 - lr * decay) - lr * g[i] / (Math.abs(g[i]) + EPS);
        }
        return out;
    }

    static double[] values(Tensor t) {
        Tensor flat = t.detach().contiguous().reshape(-1);
        double[] out = new double[(int) flat.numel()];
        for (int i = 0; i < out.length; i++) {
            out[i] = flat.get(i).item_double();
        }
        return out;
    }

    static void assertClose(double[] expected, Tensor actual, String what) {
        double[] a = values(actual);
        assertEquals(expected.length, a.length, what);
        for (int i = 0; i < a.length; i++) {
            assertEquals(expected[i], a[i], 1e-12, what + "[" + i + "]");
        }
    }

    @ParameterizedTest(name = "noWeightDecayBelow2D({0})")
    @ValueSource(booleans = {true, false})
    void firstStep_decaysMatricesAlways_vectorsOnlyWithTheOptionOff(boolean noDecay) {
        Map<String, Tensor> named = model(1);
        MuonAdamW opt = builder(named, noDecay).build();
        TestModels.setGradients(named, 2);
        Map<String, double[]> before = new LinkedHashMap<>();
        Map<String, double[]> grads = new LinkedHashMap<>();
        named.forEach((name, t) -> {
            before.put(name, values(t));
            grads.put(name, values(t.grad()));
        });
        opt.step();
        double vectorDecay = noDecay ? 0 : WD;
        assertClose(firstStep(before.get("embed.weight"), grads.get("embed.weight"), LR, WD),
                named.get("embed.weight"), "embed.weight");
        assertClose(firstStep(before.get("fc1.bias"), grads.get("fc1.bias"), LR, vectorDecay),
                named.get("fc1.bias"), "fc1.bias");
        assertClose(firstStep(before.get("gain"), grads.get("gain"), LR, vectorDecay), named.get("gain"), "gain");
    }

    @Test
    void setLr_setsBothLibtorchGroups() {
        Map<String, Tensor> named = model(1);
        MuonAdamW opt = builder(named, true).build();
        opt.setLr(MuonAdamW.ADAMW_GROUP, 0.03);
        TestModels.setGradients(named, 2);
        double[] embed = values(named.get("embed.weight"));
        double[] bias = values(named.get("fc1.bias"));
        double[] gEmbed = values(named.get("embed.weight").grad());
        double[] gBias = values(named.get("fc1.bias").grad());
        opt.step();
        assertEquals(0.03, opt.lr(MuonAdamW.ADAMW_GROUP));
        assertClose(firstStep(embed, gEmbed, 0.03, WD), named.get("embed.weight"), "embed.weight");
        assertClose(firstStep(bias, gBias, 0.03, 0), named.get("fc1.bias"), "fc1.bias");
    }

    @Test
    void table_marksTheRowsWithoutDecay() {
        MuonAdamW opt = builder(model(1), true).build();
        Map<String, String> reasons = new LinkedHashMap<>();
        opt.assignment().rows().forEach(r -> reasons.put(r.name(), r.reason()));
        assertEquals("embedding or head ('embed')", reasons.get("embed.weight"));
        assertEquals("only matrix on Muon (the output-layer rule keeps it)", reasons.get("fc1.weight"));
        assertEquals("fewer than 2 dims; no weight decay", reasons.get("fc1.bias"));
        assertEquals("fewer than 2 dims; no weight decay", reasons.get("gain"));
    }

    @Test
    void saveLoad_withTheOption_resumesBitForBit(@TempDir Path dir) {
        Map<String, Tensor> named = model(1);
        MuonAdamW opt = builder(named, true).build();
        for (int k = 1; k <= 3; k++) {
            TestModels.setGradients(named, 10 + k);
            opt.step();
        }
        Path file = dir.resolve("split.ckpt");
        opt.save(file);

        Map<String, Tensor> other = model(99);
        MuonAdamW resumed = builder(other, true).build();
        resumed.load(file);
        for (int k = 4; k <= 6; k++) {
            TestModels.setGradients(named, 10 + k);
            TestModels.setGradients(other, 10 + k);
            opt.step();
            resumed.step();
        }
        for (String name : named.keySet()) {
            assertTrue(torch.equal(named.get(name), other.get(name)), name);
        }
        for (String name : opt.assignment().names(OptimizerKind.ADAMW)) {
            AdamWState a = opt.adamWState(name).orElseThrow();
            AdamWState b = resumed.adamWState(name).orElseThrow();
            assertTrue(torch.equal(a.expAvg(), b.expAvg()) && torch.equal(a.expAvgSq(), b.expAvgSq()), name);
            assertEquals(a.step(), b.step(), name);
        }
    }

    @ParameterizedTest(name = "saved with {0}, loaded with {1}")
    @ValueSource(booleans = {true, false})
    void load_withTheOtherSetting_isRefused_andChangesNothing(boolean savedWith, @TempDir Path dir) {
        Map<String, Tensor> named = model(1);
        MuonAdamW saved = builder(named, savedWith).build();
        TestModels.setGradients(named, 5);
        saved.step();
        Path file = dir.resolve("c.ckpt");
        saved.save(file);

        Map<String, Tensor> other = model(2);
        MuonAdamW target = builder(other, !savedWith).build();
        Map<String, Tensor> before = new LinkedHashMap<>();
        other.forEach((name, t) -> before.put(name, t.clone()));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertTrue(e.getMessage().contains("noWeightDecayBelow2D"), e.getMessage());
        assertEquals(0, target.stepCount());
        other.forEach((name, t) -> assertTrue(torch.equal(before.get(name), t), name));
    }
}
