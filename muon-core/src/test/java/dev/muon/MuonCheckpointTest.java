package dev.muon;

import dev.muon.golden.NativeScopePerTest;
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
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Standalone {@link Muon} checkpoints: bit-exact resume, and refusal with nothing changed. */
@ExtendWith(NativeScopePerTest.class)
class MuonCheckpointTest {
    @TempDir
    Path dir;

    static List<Tensor> params(long seed) {
        torch.manual_seed(seed);
        return List.of(torch.randn(6, 4), torch.randn(5, 7), torch.randn(6, 4), torch.randn(3, 9));
    }

    /** Two groups with their own lrs; Nesterov off in the second. */
    static Muon muon(List<Tensor> p) {
        return Muon.builder()
                .addGroup(p.subList(0, 3), MuonConfig.defaults().withLr(0.02))
                .addGroup(p.subList(3, 4), MuonConfig.defaults().withLr(0.01).withNesterov(false))
                .build();
    }

    /** Steps from the optimizer's step count on; gradients depend on the step only. */
    static void train(Muon muon, List<Tensor> p, int steps) {
        for (int k = 0; k < steps; k++) {
            TestModels.setGradients(p, 500 + muon.stepCount());
            muon.step();
        }
    }

    @Test
    void resume_after5_equalsStraight10_bitForBit() {
        List<Tensor> straightParams = params(1);
        Muon straight = muon(straightParams);
        train(straight, straightParams, 10);

        List<Tensor> firstParams = params(1);
        Muon first = muon(firstParams);
        train(first, firstParams, 5);
        first.setLr(0, 0.015);
        straight.setLr(0, 0.015);
        Path file = dir.resolve("muon.ckpt");
        first.save(file);

        List<Tensor> resumedParams = params(2);
        Muon resumed = muon(resumedParams);
        resumed.load(file);
        assertEquals(5, resumed.stepCount());
        assertEquals(0.015, resumed.lr(0), "the saved lr is restored");
        assertEquals(0.01, resumed.lr(1));

        List<Tensor> againParams = params(1);
        Muon again = muon(againParams);
        train(again, againParams, 5);
        again.setLr(0, 0.015);
        train(again, againParams, 5);
        train(resumed, resumedParams, 5);
        for (int i = 0; i < resumedParams.size(); i++) {
            assertTrue(resumedParams.get(i).equal(againParams.get(i)), "parameter " + i + " differs");
            assertTrue(resumed.momentumBuffer(resumedParams.get(i)).orElseThrow()
                    .equal(again.momentumBuffer(againParams.get(i)).orElseThrow()), "momentum " + i + " differs");
        }
        assertEquals(10, resumed.stepCount());
    }

    static Stream<Arguments> mismatches() {
        return Stream.of(
                Arguments.of("otherShape", (Function<List<Tensor>, Muon>) p -> Muon.builder()
                        .addGroup(List.of(p.get(0), p.get(1), torch.randn(4, 6)), MuonConfig.defaults().withLr(0.02))
                        .addGroup(p.subList(3, 4), MuonConfig.defaults().withLr(0.01).withNesterov(false)).build(),
                        "'parameter 2 of group 0' shape: this optimizer [4, 6], the state [6, 4]"),
                Arguments.of("oneGroup", (Function<List<Tensor>, Muon>) p -> Muon.of(p, MuonConfig.defaults()),
                        "muon groups: this optimizer 1, the state 2; 'parameter 3 of group 0' name: this optimizer "
                                + "parameter 3 of group 0, the state parameter 0 of group 1"),
                Arguments.of("otherNsSteps", (Function<List<Tensor>, Muon>) p -> Muon.builder()
                        .addGroup(p.subList(0, 3), MuonConfig.defaults().withLr(0.02).withNsSteps(3))
                        .addGroup(p.subList(3, 4), MuonConfig.defaults().withLr(0.01).withNesterov(false)).build(),
                        "muon group 0 nsSteps: this optimizer 3, the state 5 (a build setting: build the "
                                + "optimizer with nsSteps 5)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("mismatches")
    void load_mismatch_isRefused_andChangesNothing(String name, Function<List<Tensor>, Muon> build, String message) {
        List<Tensor> savedParams = params(1);
        Muon saved = muon(savedParams);
        train(saved, savedParams, 2);
        Path file = dir.resolve("saved.ckpt");
        saved.save(file);

        Muon target = build.apply(params(3));
        List<Tensor> p = new ArrayList<>();
        for (int g = 0; g < target.groupCount(); g++) {
            p.addAll(target.parameters(g));
        }
        train(target, p, 1);
        assertLoadRefusedAndNothingChanged(target, p, file, message);
    }

    @Test
    void muonAdamWCheckpoint_isRefusedByAMuon() throws Exception {
        var named = CheckpointTest.small(torch.ScalarType.Float, 5);
        MuonAdamW hybrid = CheckpointTest.hybrid(named);
        Path file = dir.resolve("hybrid.ckpt");
        hybrid.save(file);
        Muon muon = Muon.of(List.of(torch.randn(5, 4)), MuonConfig.defaults());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> muon.load(file));
        assertTrue(e.getMessage().contains("adamw part: this optimizer none, the state present; parameters count: "
                + "this optimizer 1, the state 3"), e.getMessage());
        assertTrue(Files.exists(file));
    }

    /**
     * {@code target.load(file)} throws naming {@code message}, and the parameters, momentum and NorMuon second
     * moments of {@code p} and the step count (1) are as they were.
     */
    static void assertLoadRefusedAndNothingChanged(Muon target, List<Tensor> p, Path file, String message) {
        List<Tensor> before = snapshot(target, p);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> target.load(file));
        assertTrue(e.getMessage().contains(message), e.getMessage());
        List<Tensor> after = snapshot(target, p);
        for (int i = 0; i < before.size(); i++) {
            assertTrue(before.get(i).equal(after.get(i)), "tensor " + i + " changed");
        }
        assertEquals(1, target.stepCount());
    }

    private static List<Tensor> snapshot(Muon muon, List<Tensor> p) {
        List<Tensor> copy = new ArrayList<>();
        for (Tensor t : p) {
            copy.add(t.clone());
            copy.add(muon.momentumBuffer(t).map(Tensor::clone).orElse(torch.zeros(0)));
            copy.add(muon.secondMoment(t).map(Tensor::clone).orElse(torch.zeros(0)));
        }
        return copy;
    }
}
