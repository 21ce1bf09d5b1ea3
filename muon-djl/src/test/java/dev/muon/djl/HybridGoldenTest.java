package dev.muon.djl;

import ai.djl.Device;
import dev.muon.OptimizerKind;
import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The golden hybrid trajectory (PyTorch's Muon and AdamW, float64) through {@link MuonAdamW}: the assignment the
 * case states, then per step every parameter, Muon buffer and update, and AdamW moment, in DJL's float64 and
 * float32; on one device and on two, where DJL updates each parameter once per device with the same gradient.
 */
class HybridGoldenTest {
    private static final GoldenCase HYBRID = GoldenReader.read("hybrid_default.txt");

    static Stream<Arguments> precisions() {
        return Stream.of(Arguments.of(GoldenPrecision.FLOAT64), Arguments.of(GoldenPrecision.FLOAT32));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("precisions")
    void trajectory_matchesGolden(GoldenPrecision precision) {
        HybridReplay.replay(HYBRID, precision, List.of(Device.cpu()));
    }

    /** Per-device state and per-copy counts: a count per call would make AdamW's bias correction wrong here. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("precisions")
    void trajectory_matchesGolden_onEveryCopy_withTwoDevices(GoldenPrecision precision) {
        HybridReplay.replay(HYBRID, precision, List.of(Device.cpu(), Device.gpu(1)));
    }

    @Test
    void assignment_isTheCases_withMuonCoresReasons() {
        MuonAdamW opt = HybridReplay.replay(HYBRID, GoldenPrecision.FLOAT64, List.of(Device.cpu()));
        List<String> rows = opt.assignment().rows().stream()
                .map(r -> r.name() + " " + r.optimizer() + " " + r.reason()).toList();
        assertEquals(List.of(
                "01embed_weight ADAMW embedding or head ('embed')",
                "02mlp_01fc1_weight MUON hidden matrix",
                "02mlp_01fc1_bias ADAMW fewer than 2 dims",
                "02mlp_02fc2_weight MUON hidden matrix",
                "03lm_head_weight ADAMW embedding or head ('lm_head')"), rows);
        assertEquals(List.of("02mlp_01fc1_weight", "02mlp_02fc2_weight"), opt.assignment().names(OptimizerKind.MUON));
    }
}
