package dev.muon;

import dev.muon.schedule.LibtorchOptimizer;
import dev.muon.schedule.TrainingOptimizer;
import dev.muon.state.StateFileException;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every refusal of {@link EmaNesterovConfig} and {@link EmaNesterov}, with its message; nothing changes then. */
class EmaNesterovErrorsTest {
    private static final EmaNesterovConfig D = EmaNesterovConfig.defaults();

    static Stream<Arguments> badConfigs() {
        return Stream.of(
                Arguments.of((Executable) () -> D.withLookahead(-0.1), "lookahead must be finite and >= 0, got -0.1"),
                Arguments.of((Executable) () -> D.withLookahead(Double.NaN), "lookahead must be finite and >= 0, got NaN"),
                Arguments.of((Executable) () -> D.withLookahead(Double.POSITIVE_INFINITY),
                        "lookahead must be finite and >= 0, got Infinity"),
                Arguments.of((Executable) () -> D.withEma(1.0), "ema must be finite and in [0, 1), got 1.0"),
                Arguments.of((Executable) () -> D.withEma(-0.01), "ema must be finite and in [0, 1), got -0.01"),
                Arguments.of((Executable) () -> D.withEma(Double.NaN), "ema must be finite and in [0, 1), got NaN"),
                Arguments.of((Executable) () -> D.withLrGroup(-1), "lrGroup must be >= 0, got -1"),
                Arguments.of((Executable) () -> D.withWindow(-1, 10), "prefillSteps must be >= 0, got -1"),
                Arguments.of((Executable) () -> D.withWindow(10, 9), "restStep must be >= prefillSteps (10), got 9"));
    }

    @ParameterizedTest
    @MethodSource("badConfigs")
    void badConfig_isRejected_namingFieldRuleAndValue(Executable make, String message) {
        assertEquals(message, assertThrows(IllegalArgumentException.class, make).getMessage());
    }

    private static TrainingOptimizer sgd(Tensor x, double lr) {
        return LibtorchOptimizer.of(new SGD(new TensorVector(x), new SGDOptions(lr)));
    }

    static Stream<Arguments> badWraps() {
        return Stream.of(
                Arguments.of("noParameters", "EMA-Nesterov needs at least one parameter, got none"),
                Arguments.of("lrGroupOutOfRange", "lrGroup must be in [0, 1) for this optimizer, got 1"),
                Arguments.of("zeroLrWhenScaled", "scaleByLr needs group 0's lr > 0 when the wrapper is made (it is"
                        + " the scale's reference), got 0.0"),
                Arguments.of("sameTensorTwice", "parameter 'y' is the same tensor as 'x'; list each tensor once"),
                Arguments.of("integerParameter", "EMA-Nesterov only supports floating-point parameters; parameter "
                        + "'n' has dtype Long"));
    }

    @ParameterizedTest
    @MethodSource("badWraps")
    void badWrap_isRejected(String row, String message) {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.ones(3).requires_grad_(true);
            Map<String, Tensor> named = new LinkedHashMap<>();
            named.put("x", x);
            TrainingOptimizer inner = sgd(x, 0.1);
            EmaNesterovConfig config = D;
            switch (row) {
                case "noParameters" -> named.clear();
                case "lrGroupOutOfRange" -> config = D.withLrGroup(1);
                case "zeroLrWhenScaled" -> inner = sgd(x, 0.0);
                case "sameTensorTwice" -> named.put("y", x);
                case "integerParameter" -> named.put("n", torch.arange(new org.bytedeco.pytorch.Scalar(3)));
                default -> throw new IllegalArgumentException(row);
            }
            TrainingOptimizer in = inner;
            EmaNesterovConfig c = config;
            assertEquals(message, assertThrows(IllegalArgumentException.class,
                    () -> EmaNesterov.wrap(in, named, c)).getMessage());
        }
    }

    @Test
    void step_withoutLookahead_isRefused_andChangesNothing() {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.ones(3).requires_grad_(true);
            try (EmaNesterov opt = EmaNesterov.wrap(sgd(x, 0.1), Map.of("x", x), D)) {
                x.sum().backward();
                IllegalStateException e = assertThrows(IllegalStateException.class, opt::step);
                assertEquals("step() needs lookahead() before the forward pass of step 0, so that the gradient is "
                        + "taken at the lookahead point", e.getMessage());
                assertTrue(torch.equal(x, torch.ones(3)));
                assertEquals(0, opt.stepCount());
            }
        }
    }

    @Test
    void lookaheadTwice_saveOrLoadWhileOpen_areRefused(@TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.ones(3).requires_grad_(true);
            try (EmaNesterov opt = EmaNesterov.wrap(sgd(x, 0.1), Map.of("x", x), D)) {
                opt.lookahead();
                assertEquals("lookahead() was already called for step 0; call step() after the backward pass first",
                        assertThrows(IllegalStateException.class, opt::lookahead).getMessage());
                assertEquals("save between step() and the next lookahead(): the parameters are at the lookahead "
                        + "point of step 0", assertThrows(IllegalStateException.class,
                        () -> opt.save(dir.resolve("s"))).getMessage());
                assertTrue(Files.notExists(dir.resolve("s")));
            }
        }
    }

    @Test
    void anUnwrappedName_orANullPath_isRefusedByName() {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.ones(3).requires_grad_(true);
            try (EmaNesterov opt = EmaNesterov.wrap(sgd(x, 0.1), Map.of("x", x), D)) {
                assertEquals("name must be a parameter this wrapper wraps; 'y' is not (it wraps [x])",
                        assertThrows(IllegalArgumentException.class, () -> opt.ema("y")).getMessage());
                assertEquals("path must not be null",
                        assertThrows(NullPointerException.class, () -> opt.save(null)).getMessage());
                assertEquals("path must not be null",
                        assertThrows(NullPointerException.class, () -> opt.load(null)).getMessage());
            }
        }
    }

    @Test
    void closed_refusesEveryStateCall() {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.ones(3).requires_grad_(true);
            EmaNesterov opt = EmaNesterov.wrap(sgd(x, 0.1), Map.of("x", x), D);
            opt.close();
            opt.close();
            assertEquals("this EmaNesterov is closed",
                    assertThrows(IllegalStateException.class, opt::lookahead).getMessage());
        }
    }

    @Test
    void load_ofAnotherParameterSet_isRefused_andChangesNothing(@TempDir Path dir) {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.ones(3).requires_grad_(true);
            Path file = dir.resolve("s");
            try (EmaNesterov opt = EmaNesterov.wrap(sgd(x, 0.1), Map.of("x", x), D)) {
                opt.lookahead();
                x.sum().backward();
                opt.step();
                opt.save(file);
            }
            Tensor z = torch.ones(4).requires_grad_(true);
            try (EmaNesterov other = EmaNesterov.wrap(sgd(z, 0.1), Map.of("x", z), D)) {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> other.load(file));
                assertEquals(file + ": parameter 'x' has ema of shape [3] and dtype Float, the parameter [4] and "
                        + "Float", e.getMessage());
                assertEquals(0, other.stepCount());
            }
            try (EmaNesterov renamed = EmaNesterov.wrap(sgd(x, 0.1), Map.of("w", x), D)) {
                assertEquals(file + ": parameter 'x' is not wrapped here",
                        assertThrows(IllegalStateException.class, () -> renamed.load(file)).getMessage());
            }
        }
    }

    @Test
    void load_ofAnotherKindOfFile_namesTheRule(@TempDir Path dir) throws Exception {
        try (PointerScope scope = new PointerScope()) {
            Tensor x = torch.ones(2, 2).requires_grad_(true);
            Path ckpt = dir.resolve("muon.ckpt");
            try (Muon muon = Muon.of(java.util.List.of(x), MuonConfig.defaults())) {
                muon.save(ckpt);
                try (EmaNesterov opt = EmaNesterov.wrap(muon, Map.of("x", x), D)) {
                    StateFileException e = assertThrows(StateFileException.class, () -> opt.load(ckpt));
                    assertTrue(e.getMessage().contains("__metadata__.format")
                            && e.getMessage().contains("not an EMA-Nesterov state file"), e.getMessage());
                }
            }
        }
    }
}
