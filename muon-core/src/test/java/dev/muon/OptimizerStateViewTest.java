package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link MuonAdamW#muonState} and {@link MuonAdamW#adamWState} against one step computed by hand. */
@ExtendWith(NativeScopePerTest.class)
class OptimizerStateViewTest {
    private static final double MUON_LR = 0.02;
    private static final double ADAMW_LR = 3e-3;

    static Map<String, Tensor> model() {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("hidden.weight", torch.randn(4, 6).requires_grad_(true));
        named.put("hidden.bias", torch.randn(4).requires_grad_(true));
        return named;
    }

    static MuonAdamW optimizer(Map<String, Tensor> named) {
        return MuonAdamW.builder(named).muon(MuonConfig.defaults().withLr(MUON_LR))
                .adamW(AdamWConfig.defaults().withLr(ADAMW_LR)).build();
    }

    @Test
    void firstStep_matchesTheFormulas() {
        Map<String, Tensor> named = model();
        MuonAdamW opt = optimizer(named);
        assertTrue(opt.muonState("hidden.weight").isEmpty(), "no momentum before the first update");
        assertTrue(opt.adamWState("hidden.bias").isEmpty(), "no moments before the first update");
        Tensor gw = torch.randn(4, 6);
        Tensor gb = torch.randn(4);
        named.get("hidden.weight").mutable_grad().put(gw.clone());
        named.get("hidden.bias").mutable_grad().put(gb.clone());
        opt.step();

        MuonState muon = opt.muonState("hidden.weight").orElseThrow();
        // From zero, B = B.lerp(g, 1 − μ) = (1 − μ)·g.
        assertClose(gw.mul(new Scalar(1 - 0.95)), muon.momentum(), "momentum");
        // ORIGINAL: lr · sqrt(max(1, rows / cols)) = lr for a 4×6 matrix.
        assertEquals(MUON_LR * Math.sqrt(Math.max(1, 4.0 / 6)), muon.lastScaledLr(), 1e-18);

        AdamWState adamW = opt.adamWState("hidden.bias").orElseThrow();
        assertClose(gb.mul(new Scalar(1 - 0.9)), adamW.expAvg(), "exp_avg");
        assertClose(gb.mul(gb).mul(new Scalar(1 - 0.999)), adamW.expAvgSq(), "exp_avg_sq");
        assertEquals(1, adamW.step());
        assertEquals(ADAMW_LR, adamW.lastLr());
    }

    @Test
    void stateCopies_changeNothingInTheOptimizer() {
        Map<String, Tensor> named = model();
        MuonAdamW opt = optimizer(named);
        TestModels.setGradients(named, 5);
        opt.step();
        Tensor momentum = opt.muonState("hidden.weight").orElseThrow().momentum();
        Tensor expected = momentum.clone();
        momentum.fill_(new Scalar(7.0));
        opt.adamWState("hidden.bias").orElseThrow().expAvg().fill_(new Scalar(7.0));
        assertTrue(opt.muonState("hidden.weight").orElseThrow().momentum().equal(expected));
        assertTrue(opt.adamWState("hidden.bias").orElseThrow().expAvg().ne(new Scalar(7.0)).all().item_bool());
    }

    @Test
    void lrOfTheLastUpdate_followsTheSchedule_andIsUnknownAfterALoad(@org.junit.jupiter.api.io.TempDir
                                                                     java.nio.file.Path dir) {
        Map<String, Tensor> named = model();
        MuonAdamW opt = optimizer(named);
        TestModels.setGradients(named, 5);
        opt.step();
        opt.setLr(MuonAdamW.MUON_GROUP, 0.01);
        opt.setLr(MuonAdamW.ADAMW_GROUP, 1e-3);
        assertEquals(MUON_LR, opt.muonState("hidden.weight").orElseThrow().lastScaledLr(), "not updated since");
        opt.step();
        assertEquals(0.01, opt.muonState("hidden.weight").orElseThrow().lastScaledLr(), 1e-18);
        assertEquals(1e-3, opt.adamWState("hidden.bias").orElseThrow().lastLr());

        java.nio.file.Path file = dir.resolve("s.ckpt");
        opt.save(file);
        MuonAdamW loaded = optimizer(model());
        loaded.load(file);
        assertTrue(Double.isNaN(loaded.muonState("hidden.weight").orElseThrow().lastScaledLr()));
        assertTrue(loaded.muonState("hidden.weight").orElseThrow().momentum()
                .equal(opt.muonState("hidden.weight").orElseThrow().momentum()));
        assertEquals(2, loaded.adamWState("hidden.bias").orElseThrow().step());
    }

    static Stream<Arguments> badNames() {
        return Stream.of(
                Arguments.of("muonState_ofAnAdamWParameter_isRejected",
                        (Consumer<MuonAdamW>) o -> o.muonState("hidden.bias"),
                        "name must be a parameter on Muon; 'hidden.bias' is not (Muon parameters are [hidden.weight])"),
                Arguments.of("adamWState_ofAMuonParameter_isRejected",
                        (Consumer<MuonAdamW>) o -> o.adamWState("hidden.weight"),
                        "name must be a parameter on AdamW; 'hidden.weight' is not (AdamW parameters are [hidden.bias])"),
                Arguments.of("muonState_ofAnUnknownName_isRejected",
                        (Consumer<MuonAdamW>) o -> o.muonState("nope"),
                        "name must be a parameter on Muon; 'nope' is not (Muon parameters are [hidden.weight])"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badNames")
    void badName_isRejected(String test, Consumer<MuonAdamW> call, String message) {
        MuonAdamW opt = optimizer(model());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> call.accept(opt));
        assertEquals(message, e.getMessage());
    }

    private static void assertClose(Tensor expected, Tensor actual, String what) {
        double error = expected.sub(actual).abs().max().item_double();
        assertTrue(error <= 1e-7 * Math.max(1, expected.abs().max().item_double()), what + " differs by " + error);
    }
}
