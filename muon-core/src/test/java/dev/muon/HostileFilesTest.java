package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.PickleBytes;
import dev.muon.state.CraftedCheckpoints;
import dev.muon.state.StateFileException;
import dev.muon.state.StateMismatchException;
import dev.muon.state.TorchFiles;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Files from outside, crafted to take the process (issue 28's cases): through the public {@code load} and
 * {@code importTorchStateDict}, each is a {@link StateFileException} or {@link StateMismatchException} naming the
 * file and the entry; nothing from the file runs, the JVM lives, and the optimizer is as it was.
 */
@ExtendWith(NativeScopePerTest.class)
class HostileFilesTest {
    @TempDir
    Path dir;

    private static final long BIG = 1L << 30;

    /** A torch.optim.Muon state dict for one [6, 4] parameter, whose momentum buffer {@code momentum} writes. */
    private static byte[] muonStateDict(Consumer<PickleBytes> momentum) {
        return muonStateDict(momentum, p -> { });
    }

    /** {@link #muonStateDict(Consumer)} with more keys in the Muon group, written by {@code groupKeys}. */
    private static byte[] muonStateDict(Consumer<PickleBytes> momentum, Consumer<PickleBytes> groupKeys) {
        PickleBytes p = PickleBytes.protocol2().op('}', '(')
                .string("format").string("dev.muon.torch_state_dict/1")
                .string("param_names").op(']').string("parameter 0 of group 0").op('a')
                .string("step").integer(1)
                .string("muon").op('}', '(')
                .string("state").op('}').integer(0).op('}').string("momentum_buffer");
        momentum.accept(p);
        p.op('s', 's');
        p.string("param_groups").op(']', '}', '(')
                .string("lr").number(1e-3)
                .string("weight_decay").number(0.1)
                .string("momentum").number(0.95)
                .string("nesterov").op(0x88)
                .string("ns_coefficients").op('(').number(3.4445).number(-4.775).number(2.0315).op('t')
                .string("eps").number(1e-7)
                .string("ns_steps").integer(5)
                .string("adjust_lr_fn").string("original");
        groupKeys.accept(p);
        p.string("params").op(']').integer(0).op('a')
                .op('u', 'a', 'u', 'u');
        return p.stop();
    }

    private static Consumer<PickleBytes> view(long numel, long offset, long[] size, long[] stride) {
        return p -> p.tensor("FloatStorage", "0", numel, offset, size, stride);
    }

    static Stream<Arguments> hostileTorchFiles() {
        long[] shape = {6, 4};
        long[] contiguous = {4, 1};
        byte[] record = new byte[96];
        return Stream.of(
                Arguments.of("torchScriptClass", muonStateDict(p -> p.global("__torch__.Evil", "Evil")
                                .op(')', 0x81)), record,
                        "asks for the global __torch__.Evil.Evil, which is not allowed"),
                Arguments.of("fromFile", muonStateDict(p -> p.global("torch", "from_file").string("/tmp/pwned")
                        .op(0x88).integer(4).op(0x87, 'R')), record,
                        "asks for the global torch.from_file, which is not allowed"),
                Arguments.of("negativeOffset", muonStateDict(view(24, -BIG, shape, contiguous)), record,
                        "has storage offset -1073741824; it must be >= 0"),
                Arguments.of("offsetFarPast", muonStateDict(view(24, BIG, shape, contiguous)), record,
                        "has a view (offset 1073741824, size [6, 4], stride [4, 1]) that reaches element "
                                + "1073741847 of a storage of 24 elements"),
                Arguments.of("hugeStride", muonStateDict(view(24, 0, shape, new long[]{BIG, 1})), record,
                        "has a view (offset 0, size [6, 4], stride [1073741824, 1]) that reaches element "
                                + "5368709123 of a storage of 24 elements"),
                Arguments.of("viewPastItsRecord", muonStateDict(view(24, 64, shape, contiguous)), record,
                        "has a view (offset 64, size [6, 4], stride [4, 1]) that reaches element 87 of a storage "
                                + "of 24 elements"),
                Arguments.of("shortRecord", muonStateDict(view(128, 0, shape, contiguous)), new byte[4],
                        "declares 128 elements of FloatStorage (512 bytes), but record 'archive/data/0' holds 4 "
                                + "bytes"),
                Arguments.of("deepNesting", muonStateDict(p -> {
                    for (int i = 0; i < 100_000; i++) {
                        p.op(']');
                    }
                    for (int i = 0; i < 99_999; i++) {
                        p.op('a');
                    }
                }), record, "nests lists, dicts and tuples deeper than 32"),
                Arguments.of("wrongShape", muonStateDict(view(24, 0, new long[]{4, 6}, contiguous)), record,
                        "has shape [4, 6], parameter 'parameter 0 of group 0''s momentum buffer has [6, 4]"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hostileTorchFiles")
    void muonImport_hostileFile_isRefused_andChangesNothing(String name, byte[] pickle, byte[] record,
                                                           String rule) {
        Path file = PickleBytes.zip(dir.resolve(name + ".pt"), pickle, Map.of("data/0", record));
        Tensor w = torch.randn(6, 4);
        Muon muon = Muon.of(List.of(w), MuonConfig.defaults());
        step(muon, w);
        Tensor before = w.clone();
        Tensor momentum = muon.momentumBuffer(w).orElseThrow().clone();

        StateFileException e = assertThrows(StateFileException.class, () -> muon.importTorchStateDict(file));
        assertEquals(file, e.file());
        assertTrue(e.getMessage().contains(rule), e.getMessage());
        assertTrue(w.equal(before));
        assertTrue(muon.momentumBuffer(w).orElseThrow().equal(momentum));
        assertEquals(1, muon.stepCount());
        assertFalse(Files.exists(Path.of("/tmp/pwned")), "the file's code ran");
    }

    @Test
    void muonImport_aGoodCraftedFile_isRead() {
        ByteFloats values = new ByteFloats(24);
        Path file = PickleBytes.zip(dir.resolve("good.pt"), muonStateDict(view(24, 0, new long[]{6, 4},
                new long[]{4, 1})), Map.of("data/0", values.bytes));
        Tensor w = torch.randn(6, 4);
        Muon muon = Muon.of(List.of(w), MuonConfig.defaults());
        muon.importTorchStateDict(file);
        assertTrue(muon.momentumBuffer(w).orElseThrow().equal(values.tensor().reshape(6, 4)));
        assertEquals(1, muon.stepCount());
    }

    /** The momentum buffer of a good import replaced: NaN is refused, as a negative exp_avg_sq is. */
    @Test
    @SuppressWarnings("unchecked")
    void import_forbiddenValues_areRefused_namingTheEntry() {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = TorchStateDictTest.optimizer(named, false);
        TorchStateDictTest.train(opt, named, 2);
        Path file = dir.resolve("state.pt");
        opt.exportTorchStateDict(file);
        Map<String, Object> root = (Map<String, Object>) TorchFiles.read(file);
        Map<Object, Object> muonState = (Map<Object, Object>) ((Map<String, Object>) root.get("muon")).get("state");
        Map<String, Object> first = (Map<String, Object>) muonState.values().iterator().next();
        ((Tensor) first.get("momentum_buffer")).fill_(new Scalar(Double.NaN));
        Map<Object, Object> adamWState = (Map<Object, Object>) ((Map<String, Object>) root.get("adamw")).get("state");
        Map<String, Object> moments = (Map<String, Object>) adamWState.values().iterator().next();
        ((Tensor) moments.get("exp_avg_sq")).neg_();
        Path bad = dir.resolve("bad.pt");
        TorchFiles.write(bad, root);
        Map<String, Object> before = TorchStateDictTest.restoredOf(opt);

        StateMismatchException e = assertThrows(StateMismatchException.class, () -> opt.importTorchStateDict(bad));
        assertEquals(List.of(StateMismatchException.Field.VALUES, StateMismatchException.Field.VALUES),
                e.differences().stream().map(d -> d.field()).toList());
        assertTrue(e.getMessage().contains("'h.0.attn.c_attn.weight' momentum buffer values: this optimizer finite, "
                + "the state NaN or Inf"), e.getMessage());
        assertTrue(e.getMessage().contains("'wte.weight' exp_avg_sq values: this optimizer >= 0, the state a "
                + "negative value"), e.getMessage());
        TorchStateDictTest.assertSame(before, TorchStateDictTest.restoredOf(opt));
    }

    /** A hybrid of {@code CheckpointTest.small}'s parameters (float32) after one step of gradients 3. */
    private static MuonAdamW steppedOnce() {
        Map<String, Tensor> named = CheckpointTest.small(torch.ScalarType.Float, 5);
        MuonAdamW opt = CheckpointTest.hybrid(named);
        TestModels.setGradients(named, 3);
        opt.step();
        return opt;
    }

    /** {@code opt}'s checkpoint with {@code edit} applied to its tensors, rewritten with a valid checksum. */
    private Path savedWithTensorsEdited(MuonAdamW opt, Consumer<Map<String, Tensor>> edit) {
        Path good = dir.resolve("good.ckpt");
        opt.save(good);
        return CraftedCheckpoints.edited(good, dir.resolve("bad.ckpt"), meta -> { }, doc -> { }, edit);
    }

    /** The same values in a checkpoint (rewritten with a valid checksum, as a buggy writer's file would be). */
    @Test
    void load_forbiddenValues_areRefused_namingTheEntry() {
        MuonAdamW opt = steppedOnce();
        Path bad = savedWithTensorsEdited(opt, tensors -> {
            tensors.get("momentum/fc1.weight").fill_(new Scalar(Double.POSITIVE_INFINITY));
            tensors.get("exp_avg_sq/embed.weight").fill_(new Scalar(-1.0));
        });
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);
        StateMismatchException e = assertThrows(StateMismatchException.class, () -> opt.load(bad));
        assertEquals(2, e.differences().size(), e.getMessage());
        CheckpointTest.assertStateUnchanged(opt, 1, before);
    }

    /**
     * A list of 2^{@code levels} copies of a 1,000-character string, in a few hundred bytes: each level is a list
     * of two memo references to the level below (a tree by the reader's rules, since no list changes after it is
     * placed). Written out whole, as {@code toString()} would, it is 2^{@code levels} kB.
     */
    private static Consumer<PickleBytes> sharedSublists(int levels) {
        return p -> {
            p.op(']').string("x".repeat(1000)).op('a', 'q', 0);
            for (int k = 1; k <= levels; k++) {
                p.op('0', ']', 'h', k - 1, 'a', 'h', k - 1, 'a', 'q', k);
            }
        };
    }

    static Stream<Arguments> sharedSublistFiles() {
        return Stream.of(
                // param_names in a group: PyTorch's named groups (torch 2.6+) carry them.
                Arguments.of("paramNames", muonStateDict(view(24, 0, new long[]{6, 4}, new long[]{4, 1}),
                        p -> {
                            p.string("param_names");
                            sharedSublists(26).accept(p);
                        }), "muon.param_groups[0].param_names"),
                Arguments.of("rowSplits", muonStateDict(view(24, 0, new long[]{6, 4}, new long[]{4, 1}),
                        p -> {
                            p.string("row_splits").op('}').string("parameter 0 of group 0").op('}')
                                    .string("split_rows");
                            sharedSublists(24).accept(p);
                            p.op('s', 's');
                        }), "muon.param_groups[0].row_splits['parameter 0 of group 0']"));
    }

    /**
     * A value that shares its sublists is quoted in a bounded message, not written out: the list of 2^24 or 2^26
     * kB that toString() makes of such a 2 kB file ran out of heap before the fix.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("sharedSublistFiles")
    void muonImport_listOfSharedSublists_isRefused_inAShortMessage(String name, byte[] pickle, String entry) {
        Path file = PickleBytes.zip(dir.resolve(name + ".pt"), pickle, Map.of("data/0", new byte[96]));
        Tensor w = torch.randn(6, 4);
        Muon muon = Muon.builder().addGroup(List.of(w), MuonConfig.defaults())
                .rowSplit(w, RowSplit.splitRows(2, 2, 2)).build();
        step(muon, w);
        Tensor before = w.clone();
        Tensor momentum = muon.momentumBuffer(w).orElseThrow().clone();

        long start = System.nanoTime();
        StateFileException e = assertThrows(StateFileException.class, () -> muon.importTorchStateDict(file));
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(e.getMessage().contains(entry), e.getMessage());
        assertTrue(e.getMessage().length() < 1000, "a message of " + e.getMessage().length() + " characters");
        assertTrue(millis < 5_000, "refused after " + millis + " ms");
        assertTrue(w.equal(before));
        assertTrue(muon.momentumBuffer(w).orElseThrow().equal(momentum));
    }

    /**
     * A parameter value of NaN (issue 41's probe): in a checkpoint with a valid checksum, as a buggy writer's file
     * would be, it is refused as a NaN buffer is, naming the entry; nothing changes.
     */
    @Test
    void load_nanParameterValue_isRefused_namingTheEntry() {
        MuonAdamW opt = steppedOnce();
        Path bad = savedWithTensorsEdited(opt, tensors -> {
            tensors.get("value/fc1.weight").select(0, 1).fill_(new Scalar(Double.NaN));
            tensors.get("value/embed.weight").select(0, 0).fill_(new Scalar(Double.NEGATIVE_INFINITY));
        });
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);

        StateMismatchException e = assertThrows(StateMismatchException.class, () -> opt.load(bad));
        assertEquals(List.of("'embed.weight' value", "'fc1.weight' value"),
                e.differences().stream().map(d -> d.entry()).toList(), e.getMessage());
        assertTrue(e.getMessage().contains("'fc1.weight' value values: this optimizer finite, the state NaN or Inf"),
                e.getMessage());
        CheckpointTest.assertStateUnchanged(opt, 1, before);
    }

    /** The same through {@code restore()}, for {@code Muon} and {@code MuonAdamW}. */
    @Test
    void restore_nanParameterValue_isRefused_namingTheEntry() {
        MuonAdamW opt = steppedOnce();
        Map<String, Tensor> before = CheckpointTest.stateOf(opt);
        StateMismatchException e = assertThrows(StateMismatchException.class,
                () -> opt.restore(withNanValue(opt.state(), "fc1.weight")));
        assertEquals(1, e.differences().size(), e.getMessage());
        assertTrue(e.getMessage().contains("'fc1.weight' value values: this optimizer finite, the state NaN or Inf"),
                e.getMessage());
        CheckpointTest.assertStateUnchanged(opt, 1, before);

        Tensor w = torch.randn(6, 4);
        Muon muon = Muon.of(List.of(w), MuonConfig.defaults());
        step(muon, w);
        Tensor value = w.clone();
        StateMismatchException m = assertThrows(StateMismatchException.class,
                () -> muon.restore(withNanValue(muon.state(), "parameter 0 of group 0")));
        assertTrue(m.getMessage().contains("'parameter 0 of group 0' value values: this optimizer finite, the state "
                + "NaN or Inf"), m.getMessage());
        assertTrue(w.equal(value));
    }

    private static dev.muon.state.OptimizerState withNanValue(dev.muon.state.OptimizerState state, String name) {
        List<dev.muon.state.ParameterEntry> entries = state.entries().stream().map(e -> e.name().equals(name)
                ? e.withValue(e.value().clone().fill_(new Scalar(Double.NaN))) : e).toList();
        return new dev.muon.state.OptimizerState(state.step(), state.muonConfigs(), state.adamWConfig(), entries,
                state.schedule());
    }

    private static void step(Muon muon, Tensor w) {
        w.mutable_grad().put(torch.randn(6, 4));
        muon.step();
    }

    /** 24 distinct float32 values and their bytes. */
    private record ByteFloats(byte[] bytes) {
        ByteFloats(int count) {
            this(java.nio.ByteBuffer.allocate(4 * count).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                    .putFloat(0, 0f).array());
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < count; i++) {
                b.putFloat(i * 0.25f - 1f);
            }
        }

        Tensor tensor() {
            return torch.arange(new Scalar(24)).to(torch.ScalarType.Float).mul(new Scalar(0.25)).sub(new Scalar(1.0));
        }
    }
}
