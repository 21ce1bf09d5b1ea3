package dev.muon.distributed;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ShardPlanTest {
    /** The hidden matrices of GPT-2 small (d = 768, 12 layers), as Muon orthogonalizes them. */
    static List<long[]> gpt2Small() {
        List<long[]> shapes = new ArrayList<>();
        for (int layer = 0; layer < 12; layer++) {
            shapes.add(new long[]{2304, 768});
            shapes.add(new long[]{768, 768});
            shapes.add(new long[]{3072, 768});
            shapes.add(new long[]{768, 3072});
        }
        return shapes;
    }

    /** The bound: the busiest rank does at most 1.1x its ideal share on GPT-like shapes. */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 6, 8})
    void gpt2Small_busiestRankWithinTenPercentOfIdeal(int world) {
        ShardPlan plan = ShardPlan.longestProcessingTimeFirst(gpt2Small(), world);
        System.out.printf("GPT-2 small, W=%d: imbalance %.4f (FLOPs), %.4f (state)%n", world, plan.imbalance(),
                plan.stateImbalance());
        assertTrue(plan.imbalance() <= 1.1, "imbalance " + plan.imbalance() + " at W=" + world + "\n" + plan);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 5, 48, 60})
    void everyParameter_isOwnedByExactlyOneRank(int world) {
        ShardPlan plan = ShardPlan.longestProcessingTimeFirst(gpt2Small(), world);
        int[] seen = new int[plan.size()];
        long flops = 0;
        for (int rank = 0; rank < world; rank++) {
            for (int i : plan.ownedBy(rank)) {
                seen[i]++;
                assertEquals(rank, plan.owner(i));
            }
            flops += plan.flops(rank);
        }
        for (int count : seen) {
            assertEquals(1, count);
        }
        long expected = 0;
        for (long[] s : gpt2Small()) {
            expected += ShardPlan.iterationFlops(s[0], s[1]);
        }
        assertEquals(expected, flops);
    }

    @Test
    void longestFirst_balancesAKnownCase() {
        // Costs ∝ m³ for squares: 8, 7, 6, 5, 4 (as m = 2, ..) give 30; two ranks: LPT reaches the optimum 15/15
        // only if it places the largest first, which a first-come split (8+7 | 6+5+4) does not.
        List<long[]> shapes = List.of(new long[]{20, 20}, new long[]{40, 40}, new long[]{30, 30},
                new long[]{10, 10}, new long[]{40, 40});
        ShardPlan plan = ShardPlan.longestProcessingTimeFirst(shapes, 2);
        // 40 and 40 go to different ranks, then 30 to one of them, 20 and 10 to the other.
        assertTrue(plan.owner(1) != plan.owner(4));
        assertEquals(plan.owner(1), plan.owner(2));
        assertEquals(plan.owner(4), plan.owner(0));
        assertEquals(plan.owner(4), plan.owner(3));
    }

    @Test
    void iterationFlops_isTheSameForATransposedShape() {
        assertEquals(4L * 768 * 768 * 3072 + 2L * 768 * 768 * 768, ShardPlan.iterationFlops(768, 3072));
        assertEquals(ShardPlan.iterationFlops(768, 3072), ShardPlan.iterationFlops(3072, 768));
    }

    @Test
    void plan_isDeterministic() {
        ShardPlan a = ShardPlan.longestProcessingTimeFirst(gpt2Small(), 3);
        ShardPlan b = ShardPlan.longestProcessingTimeFirst(gpt2Small(), 3);
        for (int i = 0; i < a.size(); i++) {
            assertEquals(a.owner(i), b.owner(i));
        }
    }

    @Test
    void worldSize_zero_isRejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ShardPlan.longestProcessingTimeFirst(gpt2Small(), 0));
        assertEquals("worldSize must be >= 1, got 0", e.getMessage());
    }

    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> badInputs() {
        return java.util.stream.Stream.of(
                org.junit.jupiter.params.provider.Arguments.of("negativeSize",
                        List.of(new long[]{4, 4}, new long[]{-1, 3}), List.of(),
                        "matrixShapes[1] must be two sizes >= 0, got [-1, 3]"),
                org.junit.jupiter.params.provider.Arguments.of("threeSizes",
                        List.of(new long[]{4, 4, 4}), List.of(), "matrixShapes[0] must be two sizes >= 0, got [4, 4, 4]"),
                org.junit.jupiter.params.provider.Arguments.of("indexOutOfRange",
                        List.of(new long[]{4, 4}), List.of(List.of(0, 1)),
                        "together must list indices in [0, 1) at most once, got 1 in [0, 1]"),
                org.junit.jupiter.params.provider.Arguments.of("indexTwice",
                        List.of(new long[]{4, 4}, new long[]{4, 4}), List.of(List.of(0), List.of(0, 1)),
                        "together must list indices in [0, 2) at most once, got 0 in [0, 1]"),
                org.junit.jupiter.params.provider.Arguments.of("emptyList",
                        List.of(new long[]{4, 4}, new long[]{4, 4}), List.of(List.of(0), List.of()),
                        "together[1] must list at least one index and no null, got []"),
                org.junit.jupiter.params.provider.Arguments.of("nullIndex",
                        List.of(new long[]{4, 4}), List.of(java.util.Arrays.asList(0, null)),
                        "together[0] must list at least one index and no null, got [0, null]"));
    }

    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.MethodSource("badInputs")
    void badInput_isRejected(String name, List<long[]> shapes, List<List<Integer>> together, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ShardPlan.longestProcessingTimeFirst(shapes, together, 2));
        assertEquals(message, e.getMessage());
    }

    /** A parameter with no elements costs nothing and is still planned (Muon skips it). */
    @Test
    void emptyShape_costsNothing() {
        ShardPlan plan = ShardPlan.longestProcessingTimeFirst(List.of(new long[]{4, 4}, new long[]{0, 3}), 2);
        assertEquals(0, plan.owner(0));
        assertEquals(1, plan.owner(1));
        assertEquals(0, plan.flops(1));
    }

    /** Items kept together go to one rank, placed by their summed cost. */
    @Test
    void together_landOnOneRank_asOneItem() {
        List<long[]> shapes = List.of(new long[]{8, 8}, new long[]{4, 4}, new long[]{4, 4}, new long[]{4, 4},
                new long[]{4, 4}, new long[]{6, 6});
        ShardPlan plan = ShardPlan.longestProcessingTimeFirst(shapes, List.of(List.of(1, 2, 3, 4)), 3);
        for (int k = 2; k <= 4; k++) {
            assertEquals(plan.owner(1), plan.owner(k));
        }
        // The four 4x4 (4·384 flops) outweigh the 6x6 (1296): placed second, on their own rank.
        assertEquals(0, plan.owner(0));
        assertEquals(1, plan.owner(1));
        assertEquals(2, plan.owner(5));
    }

    @Test
    void rank_outOfRange_isRejected() {
        ShardPlan plan = ShardPlan.longestProcessingTimeFirst(gpt2Small(), 2);
        assertEquals("rank must be in [0, 2), got 2",
                assertThrows(IllegalArgumentException.class, () -> plan.ownedBy(2)).getMessage());
        assertEquals("index must be in [0, 48), got 48",
                assertThrows(IllegalArgumentException.class, () -> plan.owner(48)).getMessage());
    }
}
