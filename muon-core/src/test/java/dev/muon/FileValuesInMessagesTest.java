package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.internal.Messages;
import dev.muon.state.CraftedCheckpoints;
import dev.muon.state.StateFileException;
import dev.muon.state.TorchFiles;
import org.bytedeco.pytorch.Tensor;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A string value from a file is quoted cut to 80 characters in a refusal (docs/checkpoints.md), in both of the
 * formats an optimizer reads: an enum setting of 4 MiB made a message of 4 MiB. And a value only a value
 * constructor checked (a negative {@code adamw_step}) is refused by the reader as a {@link StateFileException}
 * naming the entry, not as the constructor's {@link IllegalArgumentException}. The files are good ones, edited.
 */
@ExtendWith(NativeScopePerTest.class)
class FileValuesInMessagesTest {
    /** 4 MiB: the value. */
    private static final String HUGE = "Q".repeat(4 << 20);

    @TempDir
    Path dir;

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    /** Edits of a checkpoint's state document, each putting {@link #HUGE} where a file's string is quoted. */
    static Stream<Arguments> hugeCheckpointValues() {
        return Stream.of(
                Arguments.of("nsPrecision", (Consumer<Map<String, Object>>) doc ->
                        map(list(doc.get("muon_groups")).get(0)).put("nsPrecision", HUGE),
                        "__metadata__.state.muon_groups[0] config key 'nsPrecision': nsPrecision must be one of "),
                Arguments.of("nsAlgorithm", (Consumer<Map<String, Object>>) doc ->
                        map(list(doc.get("muon_groups")).get(0)).put("nsAlgorithm", HUGE),
                        "__metadata__.state.muon_groups[0] config key 'nsAlgorithm': nsAlgorithm must be one of "),
                // A name the document's own rules refuse (a Muon group that does not exist) is quoted too.
                Arguments.of("name in a missing group", (Consumer<Map<String, Object>>) doc -> {
                    Map<String, Object> p = map(list(doc.get("parameters")).get(0));
                    p.put("name", HUGE);
                    p.put("optimizer", "MUON");
                    p.put("group", 7L);
                    p.put("adamw_step", null);
                }, "__metadata__.state is invalid: '"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hugeCheckpointValues")
    void checkpoint_hugeValue_isQuotedCut(String name, Consumer<Map<String, Object>> edit, String entry) {
        Path good = dir.resolve("good.ckpt");
        CheckpointTest.trained(3).save(good);
        Path file = CraftedCheckpoints.edited(good, dir.resolve("huge.ckpt"), meta -> { }, edit);
        MuonAdamW target = CheckpointTest.trained(2);
        Map<String, Tensor> before = CheckpointTest.stateOf(target);

        StateFileException e = assertThrows(StateFileException.class, () -> target.load(file));
        assertShortAndCut(e, "checkpoint " + file + ": " + entry);
        CheckpointTest.assertStateUnchanged(target, 2, before);
    }

    /** Edits of a PyTorch-format state file's tree, each putting {@link #HUGE} where a file's string is quoted. */
    static Stream<Arguments> hugeTorchValues() {
        return Stream.of(
                Arguments.of("muon_core_settings nsPrecision", (Consumer<Map<String, Object>>) root ->
                        map(map(list(map(root.get("muon")).get("param_groups")).get(0)).get("muon_core_settings"))
                                .put("nsPrecision", HUGE),
                        "muon.param_groups[0].muon_core_settings config key 'nsPrecision': nsPrecision must be one "
                                + "of "),
                Arguments.of("muon_core_settings stackedWeights", (Consumer<Map<String, Object>>) root ->
                        map(map(list(map(root.get("muon")).get("param_groups")).get(0)).get("muon_core_settings"))
                                .put("stackedWeights", HUGE),
                        "muon.param_groups[0].muon_core_settings config key 'stackedWeights': stackedWeights must "
                                + "be one of "),
                Arguments.of("a key of a part", (Consumer<Map<String, Object>>) root ->
                        map(root.get("muon")).put(HUGE, 1L), "'muon' has an unknown key '"),
                Arguments.of("a key of a group", (Consumer<Map<String, Object>>) root ->
                        map(list(map(root.get("adamw")).get("param_groups")).get(0)).put(HUGE, 1L),
                        "adamw.param_groups[0] has an unknown key '"),
                Arguments.of("a key of an AdamW state", (Consumer<Map<String, Object>>) root ->
                        map(map(map(root.get("adamw")).get("state")).values().iterator().next()).put(HUGE, 1L),
                        "has an unknown key '"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hugeTorchValues")
    void torchStateFile_hugeValue_isQuotedCut(String name, Consumer<Map<String, Object>> edit, String entry) {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = TorchStateDictTest.optimizer(named, false);
        TorchStateDictTest.train(opt, named, 2);
        Path good = dir.resolve("state.pt");
        opt.exportTorchStateDict(good);
        Map<String, Object> root = map(TorchFiles.read(good));
        edit.accept(root);
        Path file = dir.resolve("huge.pt");
        TorchFiles.write(file, root);
        Map<String, Object> before = TorchStateDictTest.restoredOf(opt);

        StateFileException e = assertThrows(StateFileException.class, () -> opt.importTorchStateDict(file));
        assertShortAndCut(e, entry);
        TorchStateDictTest.assertSame(before, TorchStateDictTest.restoredOf(opt));
    }

    private static void assertShortAndCut(StateFileException e, String entry) {
        String message = e.getMessage();
        assertTrue(message.length() < 1000, "a message of " + message.length() + " characters: "
                + message.substring(0, Math.min(message.length(), 300)));
        assertTrue(message.contains(entry), message);
        assertTrue(message.contains(Messages.shortened(HUGE)), message);
        assertTrue(message.endsWith("; nothing was changed"), message);
    }

    static Stream<Arguments> negativeAdamWSteps() {
        return Stream.of(Arguments.of(-1L), Arguments.of(-7L), Arguments.of(Long.MIN_VALUE));
    }

    /** As a negative step is ({@code CheckpointStoredScalarsTest}): the entry, the rule and the value. */
    @ParameterizedTest(name = "adamw_step {0}")
    @MethodSource("negativeAdamWSteps")
    void checkpoint_negativeAdamWStep_isAStateFileException_andChangesNothing(long step) {
        Path good = dir.resolve("good.ckpt");
        CheckpointTest.trained(3).save(good);
        Path file = CraftedCheckpoints.edited(good, dir.resolve("negative.ckpt"), meta -> { }, doc -> {
            for (Object p : list(doc.get("parameters"))) {
                if ("embed.weight".equals(map(p).get("name"))) {
                    map(p).put("adamw_step", step);
                }
            }
        });
        MuonAdamW target = CheckpointTest.trained(2);
        Map<String, Tensor> before = CheckpointTest.stateOf(target);

        StateFileException e = assertThrows(StateFileException.class, () -> target.load(file));
        assertEquals("checkpoint " + file + ": __metadata__.state parameter 'embed.weight' adamw_step must be >= 0, "
                + "got " + step + "; nothing was changed", e.getMessage());
        CheckpointTest.assertStateUnchanged(target, 2, before);
    }
}
