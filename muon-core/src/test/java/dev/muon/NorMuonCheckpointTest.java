package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NorMuon's second moments in checkpoints (bit-exact resume for {@link Muon} and {@link MuonAdamW}, refusal of a
 * NorMuon checkpoint by a plain optimizer and the reverse, with nothing changed) and in the state counts.
 */
@ExtendWith(NativeScopePerTest.class)
class NorMuonCheckpointTest {
    @TempDir
    Path dir;

    /** Two groups: NorMuon in the first (a same-shape batch and a tall matrix), plain Muon in the second. */
    static Muon norMuon(List<Tensor> p) {
        return Muon.builder()
                .addGroup(p.subList(0, 3), MuonConfig.defaults().withLr(0.02).withNorMuon(0.9, 1e-8))
                .addGroup(p.subList(3, 4), MuonConfig.defaults().withLr(0.01))
                .build();
    }

    static Muon plain(List<Tensor> p) {
        return Muon.builder()
                .addGroup(p.subList(0, 3), MuonConfig.defaults().withLr(0.02))
                .addGroup(p.subList(3, 4), MuonConfig.defaults().withLr(0.01))
                .build();
    }

    @Test
    void muon_resumeAfter4_equalsStraight8_bitForBit() {
        List<Tensor> straightParams = MuonCheckpointTest.params(1);
        Muon straight = norMuon(straightParams);
        MuonCheckpointTest.train(straight, straightParams, 8);

        List<Tensor> firstParams = MuonCheckpointTest.params(1);
        Muon first = norMuon(firstParams);
        MuonCheckpointTest.train(first, firstParams, 4);
        Path file = dir.resolve("normuon.ckpt");
        first.save(file);

        List<Tensor> resumedParams = MuonCheckpointTest.params(2);
        Muon resumed = norMuon(resumedParams);
        resumed.load(file);
        for (int i = 0; i < 3; i++) {
            assertTrue(resumed.secondMoment(resumedParams.get(i)).orElseThrow()
                    .equal(first.secondMoment(firstParams.get(i)).orElseThrow()), "second moment " + i);
        }
        assertFalse(resumed.secondMoment(resumedParams.get(3)).isPresent(), "the plain group has none");
        MuonCheckpointTest.train(resumed, resumedParams, 4);
        for (int i = 0; i < resumedParams.size(); i++) {
            assertTrue(resumedParams.get(i).equal(straightParams.get(i)), "parameter " + i + " differs");
        }
        for (int i = 0; i < 3; i++) {
            assertTrue(resumed.secondMoment(resumedParams.get(i)).orElseThrow()
                    .equal(straight.secondMoment(straightParams.get(i)).orElseThrow()), "second moment " + i);
        }
    }

    static MuonAdamW hybrid(Map<String, Tensor> named, boolean norMuon) {
        MuonConfig muon = MuonConfig.defaults().withLr(0.02);
        return MuonAdamW.builder(named)
                .muon(norMuon ? muon.withNorMuon(NorMuonConfig.defaults()) : muon)
                .adamW(AdamWConfig.defaults().withLr(3e-3))
                .build();
    }

    static void train(MuonAdamW opt, Map<String, Tensor> named, int steps) {
        TestModels.train(opt, named, 2000, steps);
    }

    @Test
    void muonAdamW_resumeAfter3_equalsStraight6_bitForBit() {
        Module model = TestModels.gptLike(20, 8, 1);
        Map<String, Tensor> named = TestModels.named(model);
        ParameterSnapshot init = ParameterSnapshot.of(named);
        MuonAdamW straight = hybrid(named, true);
        train(straight, named, 6);
        ParameterSnapshot expected = ParameterSnapshot.of(named);

        init.copyInto(named);
        MuonAdamW first = hybrid(named, true);
        train(first, named, 3);
        Path file = dir.resolve("hybrid.ckpt");
        first.save(file);

        Map<String, Tensor> resumedNamed = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW resumed = hybrid(resumedNamed, true);
        resumed.load(file);
        assertEquals(first.muonStateBytes(), resumed.muonStateBytes(), "the second moments came back");
        train(resumed, resumedNamed, 3);
        expected.assertEqualToResumed(resumedNamed);
    }

    static Stream<Arguments> switchMismatches() {
        return Stream.of(
                Arguments.of("norMuonCheckpoint_intoPlainMuon",
                        (Function<List<Tensor>, Muon>) NorMuonCheckpointTest::norMuon,
                        (Function<List<Tensor>, Muon>) NorMuonCheckpointTest::plain,
                        "muon group 0 norMuon: this optimizer off, the state withNorMuon(0.9, 1.0E-8) (a build "
                                + "setting: build the optimizer with norMuon withNorMuon(0.9, 1.0E-8)); nothing was "
                                + "changed"),
                Arguments.of("plainCheckpoint_intoNorMuon",
                        (Function<List<Tensor>, Muon>) NorMuonCheckpointTest::plain,
                        (Function<List<Tensor>, Muon>) NorMuonCheckpointTest::norMuon,
                        "muon group 0 norMuon: this optimizer withNorMuon(0.9, 1.0E-8), the state off (a build "
                                + "setting: build the optimizer with norMuon off); nothing was changed"),
                Arguments.of("otherBeta2", (Function<List<Tensor>, Muon>) NorMuonCheckpointTest::norMuon,
                        (Function<List<Tensor>, Muon>) p -> Muon.builder()
                                .addGroup(p.subList(0, 3), MuonConfig.defaults().withLr(0.02).withNorMuon(0.5, 1e-8))
                                .addGroup(p.subList(3, 4), MuonConfig.defaults().withLr(0.01)).build(),
                        "muon group 0 norMuon: this optimizer withNorMuon(0.5, 1.0E-8), the state "
                                + "withNorMuon(0.9, 1.0E-8)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("switchMismatches")
    void muon_load_norMuonMismatch_isRefused_andChangesNothing(String name, Function<List<Tensor>, Muon> save,
                                                               Function<List<Tensor>, Muon> load, String message) {
        List<Tensor> savedParams = MuonCheckpointTest.params(1);
        Muon saved = save.apply(savedParams);
        MuonCheckpointTest.train(saved, savedParams, 2);
        Path file = dir.resolve("saved.ckpt");
        saved.save(file);

        List<Tensor> p = MuonCheckpointTest.params(3);
        Muon target = load.apply(p);
        MuonCheckpointTest.train(target, p, 1);
        MuonCheckpointTest.assertLoadRefusedAndNothingChanged(target, p, file, message);
    }

    @Test
    void muonAdamW_load_norMuonMismatch_isRefusedBothWays_andChangesNothing() {
        for (boolean savedOn : new boolean[]{true, false}) {
            Map<String, Tensor> named = CheckpointTest.small(torch.ScalarType.Float, 5);
            MuonAdamW saved = hybrid(named, savedOn);
            train(saved, named, 2);
            Path file = dir.resolve("hybrid-" + savedOn + ".ckpt");
            saved.save(file);

            Map<String, Tensor> targetNamed = CheckpointTest.small(torch.ScalarType.Float, 5);
            MuonAdamW target = hybrid(targetNamed, !savedOn);
            train(target, targetNamed, 1);
            List<Tensor> before = new ArrayList<>();
            targetNamed.values().forEach(t -> before.add(t.detach().clone()));
            long stateBefore = target.muonStateBytes();
            MuonConfig configBefore = target.muonConfig();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
            String on = "withNorMuon(0.95, 1.0E-10)";
            assertTrue(e.getMessage().contains("muon group 0 norMuon: this optimizer " + (savedOn ? "off" : on)
                    + ", the state " + (savedOn ? on : "off")), e.getMessage());
            int i = 0;
            for (Tensor t : targetNamed.values()) {
                assertTrue(t.equal(before.get(i++)), "a parameter changed");
            }
            assertEquals(stateBefore, target.muonStateBytes());
            assertEquals(configBefore, target.muonConfig());
            assertEquals(1, target.stepCount());
        }
    }

    @Test
    void stateBytes_countTheSecondMoments() {
        List<Tensor> p = MuonCheckpointTest.params(1);
        Muon muon = norMuon(p);
        assertEquals(0, muon.stateBytes());
        MuonCheckpointTest.train(muon, p, 1);
        long momentum = 0;
        for (Tensor t : p) {
            momentum += t.numel() * 4;
        }
        // Float32 second moments, one per row of the NorMuon group's [6, 4], [5, 7], [6, 4].
        assertEquals(momentum + (6 + 5 + 6) * 4, muon.stateBytes());
        Tensor v = muon.secondMoment(p.get(1)).orElseThrow();
        assertEquals(torch.ScalarType.Float.value, v.scalar_type().value);
        assertEquals(List.of(5L), List.of(v.shape()[0]));
    }

    @Test
    void assignmentTable_countsTheSecondMoments_asTheOptimizerHoldsThem() {
        Map<String, Tensor> named = TestModels.named(TestModels.gptLike(20, 8, 1));
        MuonAdamW opt = hybrid(named, true);
        train(opt, named, 1);
        long muonRows = 0;
        for (Assignment.Row row : opt.assignment().rows()) {
            if (row.optimizer() == OptimizerKind.MUON) {
                Tensor momentum = opt.muonState(row.name()).orElseThrow().momentum();
                long rows = named.get(row.name()).shape()[0];
                assertEquals(momentum.nbytes() + rows * 4, row.stateBytes(), row.name());
                assertEquals(0.02 * 0.2, row.lr(), 1e-15, row.name());
                muonRows += momentum.nbytes() + rows * 4;
            }
        }
        assertEquals(muonRows, opt.muonStateBytes());
        // The printed table shows the same numbers.
        String table = opt.assignment().toString();
        for (Assignment.Row row : opt.assignment().rows()) {
            assertTrue(table.contains(" " + row.stateBytes() + "  "), row.name() + " in\n" + table);
        }
    }
}
