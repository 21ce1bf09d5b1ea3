package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.schedule.LrSchedule;
import dev.muon.schedule.LrScheduler;
import dev.muon.state.CraftedCheckpoints;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Saving and loading {@link MuonAdamW}: bit-exact resume, and every way a load must refuse a file. */
@ExtendWith(NativeScopePerTest.class)
class CheckpointTest {
    @TempDir
    Path dir;
    /** Runs {@code steps} steps from the optimizer's current step count: schedule, gradients, step. */
    static void train(MuonAdamW opt, LrScheduler lrs, Map<String, Tensor> named, int steps) {
        for (int i = 0; i < steps; i++) {
            lrs.apply(opt.stepCount());
            opt.zeroGrad();
            // The gradients depend on the step only, as a fixed data order would make them.
            TestModels.setGradients(named, 1000 + opt.stepCount());
            opt.step();
        }
    }

    static MuonAdamW hybrid(Map<String, Tensor> named) {
        return MuonAdamW.builder(named)
                .muon(MuonConfig.defaults().withLr(0.02))
                .adamW(AdamWConfig.defaults().withLr(3e-3))
                .build();
    }

    static LrScheduler schedule(MuonAdamW opt) {
        return LrScheduler.of(opt, LrSchedule.warmupCosine(5, 20, 0.1));
    }

    /** In the parameter dtypes users train in: AdamW's moments and Muon's buffers follow the parameter's dtype. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = ScalarType.class, names = {"Float", "BFloat16"})
    void resume_after10_equalsStraight20_bitForBit(ScalarType dtype) {
        Map<String, Tensor> named = gptLike(dtype);
        ParameterSnapshot init = ParameterSnapshot.of(named);

        MuonAdamW straight = hybrid(named);
        train(straight, schedule(straight), named, 20);
        ParameterSnapshot expected = ParameterSnapshot.of(named);
        Map<String, Tensor> expectedState = stateOf(straight);

        init.copyInto(named);
        MuonAdamW first = hybrid(named);
        train(first, schedule(first), named, 10);
        Path file = dir.resolve("run.ckpt");
        first.save(file);

        // A new process would build a new model (other random values) and a new optimizer, then load.
        Map<String, Tensor> resumedNamed = gptLike(dtype);
        MuonAdamW resumed = hybrid(resumedNamed);
        LrScheduler lrs = schedule(resumed);
        resumed.load(file);
        assertEquals(10, resumed.stepCount());
        train(resumed, lrs, resumedNamed, 10);

        expected.assertEqualToResumed(resumedNamed);
        Map<String, Tensor> state = stateOf(resumed);
        assertEquals(expectedState.keySet(), state.keySet());
        for (String key : state.keySet()) {
            assertTrue(state.get(key).equal(expectedState.get(key)), key + " differs from the straight run");
        }
        assertEquals(straight.lr(0), resumed.lr(0));
        assertEquals(straight.lr(1), resumed.lr(1));
    }

    /** TestModels' GPT-like model's parameters, in {@code dtype}. */
    private static Map<String, Tensor> gptLike(ScalarType dtype) {
        Module model = TestModels.gptLike(20, 8, 1);
        model.to(dtype, false);
        Map<String, Tensor> named = TestModels.named(model);
        named.values().forEach(p -> assertEquals(dtype.value, p.scalar_type().value, "the model's dtype"));
        return named;
    }

    /** Muon buffers and AdamW moments by name: what a load must restore and a failed load must not touch. */
    /** A hybrid of {@link #small}'s parameters (float32) after {@code steps} steps of gradients 40, 41, ... */
    static MuonAdamW trained(int steps) {
        Map<String, Tensor> named = small(ScalarType.Float, 5);
        MuonAdamW opt = hybrid(named);
        for (int i = 0; i < steps; i++) {
            TestModels.setGradients(named, 40 + i);
            opt.step();
        }
        return opt;
    }

    /** The optimizer still at {@code step}, with every tensor of its state ({@link #stateOf}) as {@code before}. */
    static void assertStateUnchanged(MuonAdamW opt, long step, Map<String, Tensor> before) {
        assertEquals(step, opt.stepCount());
        Map<String, Tensor> after = stateOf(opt);
        assertEquals(before.keySet(), after.keySet());
        for (String key : before.keySet()) {
            assertTrue(before.get(key).equal(after.get(key)), key + " changed");
        }
    }

    static Map<String, Tensor> stateOf(MuonAdamW opt) {
        Map<String, Tensor> state = new LinkedHashMap<>();
        for (String name : opt.assignment().names(OptimizerKind.ADAMW)) {
            opt.adamWState(name).ifPresent(m -> {
                state.put(name + "#exp_avg", m.expAvg());
                state.put(name + "#exp_avg_sq", m.expAvgSq());
                state.put(name + "#step", torch.tensor(m.step()));
            });
        }
        Map<String, Tensor> params = paramsOf(opt);
        for (String name : opt.assignment().names(OptimizerKind.MUON)) {
            opt.muonState(name).ifPresent(m -> state.put(name + "#momentum", m.momentum()));
            state.put(name, params.get(name).detach().clone());
        }
        for (String name : opt.assignment().names(OptimizerKind.ADAMW)) {
            state.put(name, params.get(name).detach().clone());
        }
        return state;
    }

    static Map<String, Tensor> small(ScalarType dtype, long fc1Rows) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        named.put("embed.weight", torch.randn(10, 4).to(dtype).requires_grad_(true));
        named.put("fc1.weight", torch.randn(fc1Rows, 4).to(dtype).requires_grad_(true));
        named.put("fc1.bias", torch.randn(fc1Rows).to(dtype).requires_grad_(true));
        return named;
    }

    static Stream<Arguments> mismatches() {
        Function<Path, Map<String, Tensor>> base = p -> small(ScalarType.Float, 5);
        return Stream.of(
                Arguments.of("shape", (Function<Path, MuonAdamW>) p -> hybrid(small(ScalarType.Float, 6)),
                        "'fc1.weight' shape: this optimizer [6, 4], the state [5, 4]"),
                Arguments.of("dtype", (Function<Path, MuonAdamW>) p -> hybrid(small(ScalarType.Double, 5)),
                        "'embed.weight' dtype: this optimizer Double, the state Float"),
                Arguments.of("name", (Function<Path, MuonAdamW>) p -> {
                    Map<String, Tensor> named = new LinkedHashMap<>();
                    base.apply(p).forEach((k, v) -> named.put(k.replace("fc1", "fc2"), v));
                    return hybrid(named);
                }, "'fc2.weight' name: this optimizer fc2.weight, the state fc1.weight"),
                Arguments.of("count", (Function<Path, MuonAdamW>) p -> {
                    Map<String, Tensor> named = base.apply(p);
                    named.put("fc2.weight", torch.randn(3, 5).requires_grad_(true));
                    return hybrid(named);
                }, "parameters count: this optimizer 4, the state 3; 'fc2.weight' presence: this optimizer present, "
                        + "the state absent"),
                Arguments.of("optimizer", (Function<Path, MuonAdamW>) p -> MuonAdamW.builder(base.apply(p))
                                .forceAdamW("fc1.weight").allowEmptyMuon(true).build(),
                        "'fc1.weight' optimizer: this optimizer ADAMW, the state MUON"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("mismatches")
    void load_mismatchedOptimizer_isRejected_andChangesNothing(String label, Function<Path, MuonAdamW> other,
                                                               String message) {
        Map<String, Tensor> named = small(ScalarType.Float, 5);
        MuonAdamW saved = hybrid(named);
        TestModels.setGradients(named, 7);
        saved.step();
        Path file = dir.resolve("good.ckpt");
        saved.save(file);

        MuonAdamW target = other.apply(file);
        stepOnce(target);
        assertLoadFails(target, file, message);
    }

    static Stream<Arguments> badFiles() {
        return Stream.of(
                Arguments.of("missing", (Function<Path, Path>) good -> good.resolveSibling("missing.ckpt"),
                        "the file does not exist or is not a regular file"),
                Arguments.of("truncated", (Function<Path, Path>) good -> write(good, "truncated.ckpt",
                        Arrays.copyOf(read(good), read(good).length / 2)), "the file is truncated"),
                Arguments.of("lastByteMissing", (Function<Path, Path>) good -> write(good, "short.ckpt",
                        Arrays.copyOf(read(good), read(good).length - 1)), "the file is truncated"),
                Arguments.of("text", (Function<Path, Path>) good -> write(good, "notes.txt",
                        "not a checkpoint\n".getBytes()), "the header length must be in [2, 16777216], got "),
                Arguments.of("libtorchArchive", (Function<Path, Path>) good -> {
                    OutputArchive out = new OutputArchive();
                    out.write("weight", torch.ones(2, 2));
                    Path p = good.resolveSibling("model.pt");
                    out.save_to(p.toString());
                    return p;
                }, "(not a safetensors file)"),
                Arguments.of("otherSafetensors", (Function<Path, Path>) good -> CraftedCheckpoints.safetensors(
                        good.resolveSibling("model.safetensors"), Map.of("format", "pt"),
                        Map.of("weight", torch.ones(2, 2))),
                        "__metadata__.format must be 'dev.muon.checkpoint', got 'pt' (not a Muon checkpoint)"),
                Arguments.of("futureVersion", (Function<Path, Path>) good -> CraftedCheckpoints.edited(good,
                        good.resolveSibling("v4.ckpt"), meta -> meta.put("format_version", "4"), doc -> { }),
                        "__metadata__.format_version must be 3, got '4' (this library reads version 3 only)"),
                // Issue 41's probes, each with the good file's SHA-256 (so wrong): refused before libtorch sees the
                // shape, and before the digest is computed. No element, but strides past a long.
                Arguments.of("emptyShapeOverflowingStrides", (Function<Path, Path>) good -> CraftedCheckpoints
                                .reshaped(good, good.resolveSibling("strides.ckpt"), "momentum/fc1.weight",
                                        new long[]{0, 1L << 62, 1L << 62}, 0, doc -> { }),
                        "tensor 'momentum/fc1.weight' has a shape whose strides overflow a long"),
                // A sparse file of a terabyte whose header claims it for a tensor the document gives [10, 4].
                Arguments.of("headerClaimsATerabyte", (Function<Path, Path>) good -> CraftedCheckpoints
                                .reshaped(good, good.resolveSibling("terabyte.ckpt"), "value/embed.weight",
                                        new long[]{1L << 38}, 1L << 40, doc -> { }),
                        "tensor 'value/embed.weight' has shape [274877906944] (274877906944 elements), more than "
                                + "the 40 of [10, 4] that the state document gives parameter 'embed.weight'"),
                // The document agrees with the header: the optimizer's [10, 4] refuses it before any allocation.
                Arguments.of("documentClaimsATerabyte", (Function<Path, Path>) good -> CraftedCheckpoints
                                .reshaped(good, good.resolveSibling("terabyte-doc.ckpt"), "value/embed.weight",
                                        new long[]{1L << 38}, 1L << 40, CheckpointTest::embedOfATerabyte),
                        "'embed.weight' shape: this optimizer [10, 4], the state [274877906944]"));
    }

    @SuppressWarnings("unchecked")
    private static void embedOfATerabyte(Map<String, Object> doc) {
        for (Object p : (List<Object>) doc.get("parameters")) {
            Map<String, Object> parameter = (Map<String, Object>) p;
            if (parameter.get("name").equals("embed.weight")) {
                parameter.put("shape", List.of(1L << 38));
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badFiles")
    void load_badFile_isRejected_andChangesNothing(String label, Function<Path, Path> makeFile, String message) {
        Map<String, Tensor> named = small(ScalarType.Float, 5);
        MuonAdamW opt = hybrid(named);
        stepOnce(opt);
        Path good = dir.resolve("good.ckpt");
        opt.save(good);
        stepOnce(opt);
        assertLoadFails(opt, makeFile.apply(good), message);
    }

    @Test
    void save_replacesThePreviousFile_andLeavesNoTemporaryFiles() throws IOException {
        Map<String, Tensor> named = small(ScalarType.Float, 5);
        MuonAdamW opt = hybrid(named);
        Path file = dir.resolve("run.ckpt");
        stepOnce(opt);
        opt.save(file);
        stepOnce(opt);
        opt.save(file);
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(file), files.toList());
        }
        MuonAdamW other = hybrid(small(ScalarType.Float, 5));
        other.load(file);
        assertEquals(2, other.stepCount());
    }

    private static void stepOnce(MuonAdamW opt) {
        TestModels.setGradients(paramsOf(opt), 11 + opt.stepCount());
        opt.step();
    }

    /** The optimizer's parameters by name (aliases excluded), as its handles. */
    static Map<String, Tensor> paramsOf(MuonAdamW opt) {
        Map<String, Tensor> named = new LinkedHashMap<>();
        for (OptimizerKind kind : OptimizerKind.values()) {
            List<String> names = opt.assignment().names(kind);
            List<Tensor> tensors = opt.assignment().tensors(kind);
            for (int i = 0; i < names.size(); i++) {
                named.put(names.get(i), tensors.get(i));
            }
        }
        return named;
    }

    private static void assertLoadFails(MuonAdamW opt, Path file, String message) {
        Map<String, Tensor> before = stateOf(opt);
        long step = opt.stepCount();
        double lr0 = opt.lr(0);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> opt.load(file));
        assertTrue(e.getMessage().contains(message), e.getMessage());
        Map<String, Tensor> after = stateOf(opt);
        assertEquals(before.keySet(), after.keySet());
        for (String key : before.keySet()) {
            assertTrue(before.get(key).equal(after.get(key)), key + " changed in a failed load");
        }
        assertEquals(step, opt.stepCount());
        assertEquals(lr0, opt.lr(0));
    }

    private static byte[] read(Path p) {
        try {
            return Files.readAllBytes(p);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static Path write(Path good, String name, byte[] bytes) {
        try {
            return Files.write(good.resolveSibling(name), bytes);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
