package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.orthogonalize.CoefficientSchedule;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import dev.muon.state.TorchFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MuonAdamW#exportTorchStateDict} and {@link MuonAdamW#importTorchStateDict}: the dict's layout, the bit-exact
 * round trip, a resumed run equal to a straight one, and every way an import must refuse a file without changing
 * anything.
 */
@ExtendWith(NativeScopePerTest.class)
class TorchStateDictTest {
    @TempDir
    Path dir;

    static MuonAdamW optimizer(Map<String, Tensor> named, boolean noDecayBelow2D) {
        return MuonAdamW.builder(named)
                .muon(MuonConfig.defaults().withLr(0.02))
                .adamW(AdamWConfig.defaults().withLr(3e-3))
                .noWeightDecayBelow2D(noDecayBelow2D)
                .build();
    }

    static void train(MuonAdamW opt, Map<String, Tensor> named, int steps) {
        TestModels.train(opt, named, 500, steps);
    }

    /** Exports the optimizer's state to {@code state.pt} in this test's directory. */
    private Path exportedFile(MuonAdamW opt) {
        Path file = dir.resolve("state.pt");
        opt.exportTorchStateDict(file);
        return file;
    }

    /** An optimizer over a GPT-like model, its model, and its export after some training steps. */
    private record Exported(Map<String, Tensor> named, MuonAdamW opt, Path file) {
        /** Imports the file (as it is now) back into the optimizer. */
        void reimport() {
            opt.importTorchStateDict(file);
        }
    }

    private Exported exported(boolean noDecayBelow2D, int steps) {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = optimizer(named, noDecayBelow2D);
        train(opt, named, steps);
        return new Exported(named, opt, exportedFile(opt));
    }

    /** Everything an import restores: buffers, moments and step counts by name, configs and the step count. */
    static Map<String, Object> restoredOf(MuonAdamW opt) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String name : opt.assignment().names(OptimizerKind.MUON)) {
            opt.muonState(name).ifPresent(m -> out.put(name + "#momentum", m.momentum()));
        }
        for (String name : opt.assignment().names(OptimizerKind.ADAMW)) {
            opt.adamWState(name).ifPresent(m -> {
                out.put(name + "#exp_avg", m.expAvg());
                out.put(name + "#exp_avg_sq", m.expAvgSq());
                out.put(name + "#step", m.step());
            });
        }
        out.put("muonConfig", opt.muonConfig());
        out.put("adamWConfig", opt.adamWConfig());
        out.put("stepCount", opt.stepCount());
        return out;
    }

    static void assertSame(Map<String, Object> expected, Map<String, Object> actual) {
        assertEquals(expected.keySet(), actual.keySet());
        for (String key : expected.keySet()) {
            Object e = expected.get(key);
            Object a = actual.get(key);
            if (e instanceof Tensor t) {
                assertTrue(t.equal((Tensor) a), key + " differs");
            } else {
                assertEquals(e, a, key);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void roundTrip_exportTrainImport_restoresEveryBit(boolean noDecayBelow2D) {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = optimizer(named, noDecayBelow2D);
        train(opt, named, 3);
        Map<String, Object> exported = restoredOf(opt);
        Path file = exportedFile(opt);

        train(opt, named, 2);
        opt.setLr(MuonAdamW.MUON_GROUP, 0.5);
        opt.setLr(MuonAdamW.ADAMW_GROUP, 0.25);
        opt.importTorchStateDict(file);

        assertSame(exported, restoredOf(opt));
    }

    @Test
    void resume_fromTorchState_equalsStraightRun_bitForBit() {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW straight = optimizer(named, true);
        train(straight, named, 3);
        ParameterSnapshot atExport = ParameterSnapshot.of(named);
        Path file = exportedFile(straight);
        train(straight, named, 3);
        ParameterSnapshot expected = ParameterSnapshot.of(named);

        // The parameters travel in the model's own state dict; the optimizer state in this file.
        Map<String, Tensor> resumedNamed = TestModels.named(TestModels.gptLike(20, 8, 1));
        atExport.copyInto(resumedNamed);
        MuonAdamW resumed = optimizer(resumedNamed, true);
        resumed.importTorchStateDict(file);
        assertEquals(3, resumed.stepCount());
        train(resumed, resumedNamed, 3);

        expected.assertEqualToResumed(resumedNamed);
    }

    @Test
    void export_writesPyTorchLayout() throws IOException {
        Exported saved = exported(true, 2);

        Map<?, ?> root = (Map<?, ?>) TorchFiles.read(saved.file());
        assertEquals(List.of("format", "param_names", "step", "muon", "adamw"), new ArrayList<>(root.keySet()));
        assertEquals(new ArrayList<>(saved.named().keySet()), root.get("param_names"));
        assertEquals(2L, root.get("step"));
        List<?> names = (List<?>) root.get("param_names");

        Map<?, ?> muon = (Map<?, ?>) root.get("muon");
        Map<?, ?> muonGroup = (Map<?, ?>) ((List<?>) muon.get("param_groups")).get(0);
        assertEquals(List.of("lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps",
                "adjust_lr_fn", "muon_core_settings", "params"), new ArrayList<>(muonGroup.keySet()));
        // muon-core's settings torch.optim.Muon has no key for, by their checkpoint names.
        assertEquals(List.of("nsPrecision", "nsAlgorithm", "nsPreconditioning", "convWeights", "stackedWeights",
                "orthogonalization", "batchSameShape", "norMuon", "cautiousWeightDecay", "momentumPrecision",
                "hyperball", "radialBrake", "relativeUpdate", "updateFloor", "muown"),
                new ArrayList<>(((Map<?, ?>) muonGroup.get("muon_core_settings")).keySet()));
        assertEquals(0.02, muonGroup.get("lr"));
        assertEquals(TorchFiles.tuple(3.4445, -4.775, 2.0315), muonGroup.get("ns_coefficients"));
        assertEquals(5L, muonGroup.get("ns_steps"));
        assertEquals("original", muonGroup.get("adjust_lr_fn"));
        List<?> muonIds = (List<?>) muonGroup.get("params");
        assertEquals(saved.opt().assignment().names(OptimizerKind.MUON),
                muonIds.stream().map(id -> names.get((int) (long) (Long) id)).toList());
        for (Object id : muonIds) {
            String name = (String) names.get((int) (long) (Long) id);
            Map<?, ?> s = (Map<?, ?>) ((Map<?, ?>) muon.get("state")).get(id);
            assertEquals(List.of("momentum_buffer"), new ArrayList<>(s.keySet()));
            assertTrue(((Tensor) s.get("momentum_buffer")).equal(saved.opt().muonState(name).orElseThrow().momentum()),
                    name);
        }

        Map<?, ?> adamW = (Map<?, ?>) root.get("adamw");
        List<?> groups = (List<?>) adamW.get("param_groups");
        assertEquals(2, groups.size());
        Map<?, ?> decayed = (Map<?, ?>) groups.get(0);
        assertEquals(List.of("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable",
                "differentiable", "fused", "decoupled_weight_decay", "params"), new ArrayList<>(decayed.keySet()));
        assertEquals(true, decayed.get("decoupled_weight_decay"));
        assertEquals(TorchFiles.tuple(0.9, 0.999), decayed.get("betas"));
        assertEquals(0.01, decayed.get("weight_decay"));
        assertEquals(0.0, ((Map<?, ?>) groups.get(1)).get("weight_decay"));
        assertEquals(false, decayed.get("amsgrad"));
        assertEquals(null, decayed.get("foreach"));
        for (Object group : groups) {
            for (Object id : (List<?>) ((Map<?, ?>) group).get("params")) {
                String name = (String) names.get((int) (long) (Long) id);
                AdamWState expected = saved.opt().adamWState(name).orElseThrow();
                Map<?, ?> s = (Map<?, ?>) ((Map<?, ?>) adamW.get("state")).get(id);
                assertEquals(List.of("step", "exp_avg", "exp_avg_sq"), new ArrayList<>(s.keySet()));
                Tensor step = (Tensor) s.get("step");
                assertEquals("Float", step.scalar_type().toString());
                assertEquals(0, step.dim());
                assertEquals((double) expected.step(), step.item_double());
                assertTrue(((Tensor) s.get("exp_avg")).equal(expected.expAvg()), name);
                assertTrue(((Tensor) s.get("exp_avg_sq")).equal(expected.expAvgSq()), name);
            }
        }
    }

    @Test
    void import_mapsIdsByPosition_likeLoadStateDict() throws IOException {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = optimizer(named, false);
        train(opt, named, 2);
        Map<String, Object> exported = restoredOf(opt);
        Path file = exportedFile(opt);
        // Python's two optimizers number their own parameters from 0, and the format key is ours only.
        Map<String, Object> root = edited(file, r -> {
            r.remove("format");
            renumber(part(r, "muon"));
            renumber(part(r, "adamw"));
        });
        TorchFiles.write(file, root);
        train(opt, named, 1);
        opt.importTorchStateDict(file);
        assertSame(exported, restoredOf(opt));
    }

    @SuppressWarnings("unchecked")
    private static void renumber(Map<String, Object> part) {
        Map<Object, Object> state = (Map<Object, Object>) part.get("state");
        Map<Object, Object> renumbered = new LinkedHashMap<>();
        long next = 0;
        for (Object group : (List<Object>) part.get("param_groups")) {
            List<Object> ids = (List<Object>) ((Map<String, Object>) group).get("params");
            for (int j = 0; j < ids.size(); j++) {
                if (state.containsKey(ids.get(j))) {
                    renumbered.put(next, state.get(ids.get(j)));
                }
                ids.set(j, next++);
            }
        }
        part.put("state", renumbered);
    }

    // ------------------------------------------------------------------ refused imports

    @SuppressWarnings("unchecked")
    private static Map<String, Object> part(Map<String, Object> root, String key) {
        return (Map<String, Object>) root.get(key);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> group(Map<String, Object> root, String key, int g) {
        return (Map<String, Object>) ((List<Object>) part(root, key).get("param_groups")).get(g);
    }

    /** The state entry of a part's first parameter that has one. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> firstState(Map<String, Object> root, String key) {
        Map<Object, Object> state = (Map<Object, Object>) part(root, key).get("state");
        return (Map<String, Object>) state.values().iterator().next();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> edited(Path file, Consumer<Map<String, Object>> edit) throws IOException {
        Map<String, Object> root = deepCopy((Map<String, Object>) TorchFiles.read(file));
        edit.accept(root);
        return root;
    }

    /** Mutable copies of the maps and lists {@link TorchFiles#read} returned. */
    @SuppressWarnings("unchecked")
    private static <T> T deepCopy(T value) {
        if (value instanceof Map<?, ?> map) {
            Map<Object, Object> copy = new LinkedHashMap<>();
            map.forEach((k, v) -> copy.put(k, deepCopy(v)));
            return (T) copy;
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(v -> copy.add(deepCopy(v)));
            return (T) copy;
        }
        return value;
    }

    record BadFile(String name, Consumer<Map<String, Object>> edit, String message) {
        @Override
        public String toString() {
            return name;
        }
    }

    @SuppressWarnings("unchecked")
    static Stream<BadFile> badFiles() {
        return Stream.of(
                new BadFile("top_missingMuon", r -> r.remove("muon"), "the file has no 'muon'"),
                new BadFile("top_missingAdamW", r -> r.remove("adamw"), "the file has no 'adamw'"),
                new BadFile("top_missingParamNames", r -> r.remove("param_names"), "the file has no 'param_names'"),
                new BadFile("top_unknownKey", r -> r.put("scheduler", 1L), "unknown top-level key 'scheduler'"),
                new BadFile("top_otherFormat", r -> r.put("format", "other/2"),
                        "format must be 'dev.muon.torch_state_dict/1', got 'other/2'"),
                new BadFile("top_negativeStep", r -> r.put("step", -1L), "step must be an int >= 0, got -1"),
                new BadFile("paramNames_oneMissing", r -> ((List<Object>) r.get("param_names")).remove(0),
                        "param_names holds 16 names, this optimizer trains 17 parameters"),
                new BadFile("paramNames_renamed", r -> ((List<Object>) r.get("param_names")).set(0, "emb.weight"),
                        "param_names[0] is 'emb.weight', this optimizer's parameter 0 is 'wte.weight'"),
                new BadFile("muon_twoGroups", r -> ((List<Object>) part(r, "muon").get("param_groups"))
                        .add(new LinkedHashMap<>(group(r, "muon", 0))),
                        "muon.param_groups holds 2 group(s), this optimizer has 1"),
                new BadFile("muon_unknownPartKey", r -> part(r, "muon").put("extra", 1L),
                        "'muon' has an unknown key 'extra'"),
                new BadFile("muon_paramsCountWrong", r -> ((List<Object>) group(r, "muon", 0).get("params"))
                        .remove(0), "muon.param_groups[0].params holds 3 parameter(s), this optimizer's group "
                        + "holds 4"),
                new BadFile("muon_groupMissingMomentum", r -> group(r, "muon", 0).remove("momentum"),
                        "muon.param_groups[0] has no 'momentum'"),
                new BadFile("muon_groupUnknownKey", r -> group(r, "muon", 0).put("foo", 1L),
                        "muon.param_groups[0] has an unknown key 'foo'"),
                new BadFile("muon_momentumOutOfRange", r -> group(r, "muon", 0).put("momentum", 1.5),
                        "muon.param_groups[0] momentum must be < 1, got 1.5"),
                new BadFile("muon_lrNotANumber", r -> group(r, "muon", 0).put("lr", "fast"),
                        "muon.param_groups[0].lr must be a number, got 'fast'"),
                new BadFile("muon_adjustLrUnknown", r -> group(r, "muon", 0).put("adjust_lr_fn", "spectral"),
                        "adjust_lr_fn must be None, 'original' or 'match_rms_adamw', got 'spectral'"),
                new BadFile("muon_coefficientsTwo", r -> group(r, "muon", 0).put("ns_coefficients",
                        TorchFiles.tuple(3.0, -4.0)), "ns_coefficients must hold 3 numbers, got 2"),
                // Found by FileReadersFuzzTest: a NaN coefficient escaped as a bare IllegalArgumentException.
                new BadFile("muon_coefficientNaN", r -> group(r, "muon", 0).put("ns_coefficients",
                        TorchFiles.tuple(Double.NaN, -4.775, 2.0315)),
                        "muon.param_groups[0].ns_coefficients must hold finite numbers, got (NaN, -4.775, 2.0315)"),
                new BadFile("muon_nsStepsZero", r -> group(r, "muon", 0).put("ns_steps", 0L),
                        "ns_steps must be an int >= 1, got 0"),
                new BadFile("muon_bufferWrongShape", r -> firstState(r, "muon").put("momentum_buffer",
                        ((Tensor) firstState(r, "muon").get("momentum_buffer")).t().contiguous()), "has shape [8, 24]"),
                new BadFile("muon_bufferWrongDtype", r -> firstState(r, "muon").put("momentum_buffer",
                        ((Tensor) firstState(r, "muon").get("momentum_buffer")).to(torch.ScalarType.Double)),
                        "has dtype Double, parameter 'h.0.attn.c_attn.weight''s momentum buffer has Float"),
                new BadFile("muon_stateUnknownKey", r -> firstState(r, "muon").put("velocity", 1.0),
                        "has an unknown key 'velocity' (expected [momentum_buffer])"),
                new BadFile("muon_stateForUnknownId", r -> ((Map<Object, Object>) part(r, "muon").get("state"))
                        .put(999L, firstState(r, "muon")), "muon.state has an entry for 999, which is no "
                        + "parameter id"),
                new BadFile("adamW_amsgradOn", r -> group(r, "adamw", 0).put("amsgrad", true),
                        "adamw.param_groups[0].amsgrad must be False"),
                new BadFile("adamW_maximizeOn", r -> group(r, "adamw", 0).put("maximize", true),
                        "adamw.param_groups[0].maximize must be False"),
                new BadFile("adamW_decoupledOff", r -> group(r, "adamw", 0).put("decoupled_weight_decay", false),
                        "adamw.param_groups[0].decoupled_weight_decay must be True"),
                new BadFile("adamW_betasOne", r -> group(r, "adamw", 0).put("betas", TorchFiles.tuple(0.9)),
                        "adamw.param_groups[0].betas must hold 2 numbers, got 1"),
                new BadFile("adamW_lrNegative", r -> group(r, "adamw", 0).put("lr", -1.0),
                        "adamw.param_groups[0] lr must be"),
                new BadFile("adamW_groupMissingEps", r -> group(r, "adamw", 0).remove("eps"),
                        "adamw.param_groups[0] has no 'eps'"),
                new BadFile("adamW_stateMissingExpAvgSq", r -> firstState(r, "adamw").remove("exp_avg_sq"),
                        "has no 'exp_avg_sq'"),
                new BadFile("adamW_stateAmsgradMoment", r -> firstState(r, "adamw").put("max_exp_avg_sq",
                        firstState(r, "adamw").get("exp_avg_sq")), "amsgrad is not supported"),
                new BadFile("adamW_stepFractional", r -> firstState(r, "adamw").put("step", torch.tensor(1.5)),
                        "step must be a whole number >= 0, got 1.5"),
                new BadFile("adamW_stepNotScalar", r -> firstState(r, "adamw").put("step", torch.ones(2)),
                        "step must be a scalar tensor, got shape [2]"),
                new BadFile("adamW_momentNotTensor", r -> firstState(r, "adamw").put("exp_avg", 0.0),
                        "exp_avg must be a tensor, got 0.0"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badFiles")
    void import_badFile_isRefused_andChangesNothing(BadFile bad) throws IOException {
        Exported saved = exported(false, 2);
        TorchFiles.write(saved.file(), edited(saved.file(), bad.edit()));
        train(saved.opt(), saved.named(), 1);
        Map<String, Object> before = restoredOf(saved.opt());

        IllegalStateException e = assertThrows(IllegalStateException.class, saved::reimport);
        assertTrue(e.getMessage().contains(bad.message()), e.getMessage());
        assertTrue(e.getMessage().contains(saved.file().toString()), e.getMessage());
        assertSame(before, restoredOf(saved.opt()));
    }

    static Stream<Arguments> badBytes() {
        return Stream.of(
                Arguments.of("truncated", (java.util.function.UnaryOperator<byte[]>) b -> Arrays.copyOf(b,
                        b.length / 2), "the file is not a zip archive, as torch.save writes"),
                Arguments.of("garbage", (java.util.function.UnaryOperator<byte[]>) b -> "not a zip".getBytes(),
                        "the file is not a zip archive, as torch.save writes"),
                Arguments.of("notADict", (java.util.function.UnaryOperator<byte[]>) b -> torchSave(
                        List.of(1L, 2L)), "the file must be a dict, got a list"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badBytes")
    void import_corruptFile_isRefused_andChangesNothing(String name, java.util.function.UnaryOperator<byte[]> bytes,
                                                         String message) throws IOException {
        Exported saved = exported(false, 2);
        Files.write(saved.file(), bytes.apply(Files.readAllBytes(saved.file())));
        Map<String, Object> before = restoredOf(saved.opt());

        IllegalStateException e = assertThrows(IllegalStateException.class, saved::reimport);
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertSame(before, restoredOf(saved.opt()));
    }

    @Test
    void import_missingFile_isRefused() {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = optimizer(named, false);
        Path file = dir.resolve("absent.pt");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> opt.importTorchStateDict(file));
        assertEquals("torch state dict " + file + ": the file does not exist or is not a regular file; nothing was "
                + "changed", e.getMessage());
    }

    @Test
    void import_adamWGroupCount_fromOtherNoDecaySetting_isRefused() {
        Exported saved = exported(true, 1);
        MuonAdamW oneGroup = optimizer(saved.named(), false);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> oneGroup.importTorchStateDict(saved.file()));
        assertTrue(e.getMessage().contains("adamw.param_groups holds 2 group(s), this optimizer has 1"),
                e.getMessage());
    }

    @Test
    void import_undecayedGroupWithDecay_isRefused() throws IOException {
        Exported saved = exported(true, 1);
        TorchFiles.write(saved.file(), edited(saved.file(), r -> group(r, "adamw", 1).put("weight_decay", 0.1)));
        IllegalStateException e = assertThrows(IllegalStateException.class, saved::reimport);
        assertTrue(e.getMessage().contains("adamw.param_groups[1].weight_decay must be 0"), e.getMessage());
    }

    // ------------------------------------------------------------------ refused exports

    static Stream<Arguments> inexpressibleConfigs() {
        return Stream.of(
                Arguments.of(MuonConfig.defaults().withAdjustLr(AdjustLr.SPECTRAL), "adjustLr SPECTRAL has no "
                        + "torch.optim.Muon adjust_lr_fn"),
                Arguments.of(MuonConfig.defaults().withExtraScale(2.0), "extraScale must be 1"),
                Arguments.of(MuonConfig.defaults().withNsCoefficients(CoefficientSchedule.polarExpress5()),
                        "nsCoefficients must be one (a, b, c) used at every step"));
    }

    @ParameterizedTest
    @MethodSource("inexpressibleConfigs")
    void export_configWithoutTorchEquivalent_isRefused_andWritesNothing(MuonConfig config, String message) {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = MuonAdamW.builder(named).muon(config).build();
        Path file = dir.resolve("state.pt");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> opt.exportTorchStateDict(file));
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertFalse(Files.exists(file));
    }

    @Test
    void import_adoptsGroupHyperparameters_likeLoadStateDict() throws IOException {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = optimizer(named, false);
        Path file = exportedFile(opt);
        TorchFiles.write(file, edited(file, r -> {
            Map<String, Object> m = group(r, "muon", 0);
            m.put("lr", 0.05);
            m.put("momentum", 0.9);
            m.put("nesterov", false);
            m.put("adjust_lr_fn", "match_rms_adamw");
            Map<String, Object> a = group(r, "adamw", 0);
            a.put("lr", 1e-3);
            a.put("betas", TorchFiles.tuple(0.8, 0.99));
            a.put("weight_decay", 0.2);
        }));
        opt.importTorchStateDict(file);
        MuonConfig m = opt.muonConfig();
        assertEquals(0.05, m.lr());
        assertEquals(0.9, m.momentum());
        assertFalse(m.nesterov());
        assertEquals(AdjustLr.MATCH_RMS_ADAMW, m.adjustLr());
        assertEquals(new AdamWConfig(1e-3, 0.8, 0.99, 1e-8, 0.2), opt.adamWConfig());
        assertEquals(0.05, opt.lr(MuonAdamW.MUON_GROUP));
        assertEquals(1e-3, opt.lr(MuonAdamW.ADAMW_GROUP));
    }

    /**
     * ns_coefficients, ns_steps and eps built this optimizer's Newton–Schulz: a file with others is refused, each
     * difference named, as a checkpoint with other build settings is (one restore behaviour).
     */
    @Test
    void import_otherNewtonSchulzSettings_isRefused_listingEach() throws IOException {
        Exported saved = exported(false, 1);
        TorchFiles.write(saved.file(), edited(saved.file(), r -> {
            Map<String, Object> m = group(r, "muon", 0);
            m.put("ns_coefficients", TorchFiles.tuple(2.0, -1.5, 0.5));
            m.put("ns_steps", 3L);
        }));
        Map<String, Object> before = restoredOf(saved.opt());
        dev.muon.state.StateMismatchException e = assertThrows(dev.muon.state.StateMismatchException.class,
                saved::reimport);
        assertEquals(List.of("nsCoefficients", "nsSteps"), e.differences().stream()
                .map(dev.muon.state.StateMismatchException.Difference::subject).toList());
        assertTrue(e.getMessage().startsWith("torch state dict " + saved.file() + " does not fit this optimizer (2 "
                + "differences): muon group 0 nsCoefficients: this optimizer "), e.getMessage());
        assertSame(before, restoredOf(saved.opt()));
    }

    @Test
    void pickle_valuesRoundTrip_throughTheWeightsOnlyReader() {
        Tensor bf16 = torch.randn(3, 5).to(torch.ScalarType.BFloat16);
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("none", null);
        root.put("bools", List.of(true, false));
        root.put("ints", List.of(0L, -1L, 1L << 40, Long.MIN_VALUE));
        root.put("floats", TorchFiles.tuple(1e-8, -0.0, Double.MAX_VALUE));
        root.put("unicode", "Ünïcödé → ok");
        root.put("bf16", bf16);
        root.put("empty", torch.zeros(0, 4));
        Path file = dir.resolve("values.pt");
        TorchFiles.write(file, root);
        Map<?, ?> back = (Map<?, ?>) TorchFiles.read(file);
        assertEquals(new ArrayList<>(root.keySet()), new ArrayList<>(back.keySet()));
        for (String key : List.of("none", "bools", "ints", "floats", "unicode")) {
            assertEquals(root.get(key), back.get(key), key);
        }
        Tensor t = assertInstanceOf(Tensor.class, back.get("bf16"));
        assertEquals("BFloat16", t.scalar_type().toString());
        assertTrue(t.equal(bf16));
        assertArrayEquals(new long[]{0, 4}, ((Tensor) back.get("empty")).shape());
    }

    private static byte[] torchSave(Object root) {
        return TorchFiles.bytes(root);
    }

    @Test
    void export_intoMissingDirectory_throwsUncheckedIO_andLeavesNoFile() {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = optimizer(named, false);
        Path file = dir.resolve("absent").resolve("state.pt");
        java.io.UncheckedIOException e = assertThrows(java.io.UncheckedIOException.class,
                () -> opt.exportTorchStateDict(file));
        assertTrue(e.getMessage().startsWith("cannot save torch state dict " + file), e.getMessage());
        assertFalse(Files.exists(file.getParent()));
    }
}
