package dev.muon.djl;

import ai.djl.ndarray.NDManager;
import dev.muon.NonFinitePolicy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * muon-core's {@link NonFinitePolicy} under DJL's calls, which hand the parameters over one at a time: a step is
 * skipped or refused whole whichever parameter holds the bad gradient and wherever DJL hands it over.
 */
class NonFinitePolicyTest {

    static Stream<Arguments> badGradients() {
        List<Arguments> rows = new ArrayList<>();
        for (String bad : TinyModel.NAMES) {
            for (float value : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
                for (boolean handedOverLast : new boolean[] {false, true}) {
                    rows.add(Arguments.of(bad, value, handedOverLast));
                }
            }
        }
        return rows.stream();
    }

    /** The call order with {@code name} first or last. */
    private static List<String> order(String name, boolean last) {
        List<String> order = new ArrayList<>(TinyModel.NAMES);
        order.remove(name);
        order.add(last ? order.size() : 0, name);
        return order;
    }

    @ParameterizedTest(name = "{1} in {0}, handed over last: {2}")
    @MethodSource("badGradients")
    void skip_leavesTheWholeStepUnchanged_andTheNextStepIsTheFirst(String bad, float value, boolean last) {
        try (NDManager manager = NDManager.newBaseManager()) {
            TinyModel model = new TinyModel(manager, true);
            MuonAdamW opt = MuonAdamW.builder().optBlock(model.block).build();
            Map<String, float[]> before = model.snapshot();
            model.backward(model.gradients(1, bad, value));
            model.step(opt, order(bad, last));
            Map<String, float[]> after = model.snapshot();
            for (String name : TinyModel.NAMES) {
                assertArrayEquals(before.get(name), after.get(name), name + " changed in a skipped step");
                assertArrayEquals(new float[after.get(name).length], model.gradientSnapshot().get(name),
                        name + ": the skipped step's gradient is zeroed for the next one");
            }
            assertEquals(0, opt.stepCount());
            assertEquals(1, opt.skippedSteps());

            // The next step is the first: the same as a fresh optimizer's first step with the same gradients.
            model.backward(model.gradients(2, null, 0));
            model.step(opt, TinyModel.NAMES);
            TinyModel fresh = new TinyModel(manager, true);
            MuonAdamW freshOpt = MuonAdamW.builder().optBlock(fresh.block).build();
            fresh.backward(fresh.gradients(2, null, 0));
            fresh.step(freshOpt, TinyModel.NAMES);
            Map<String, float[]> got = model.snapshot();
            Map<String, float[]> expected = fresh.snapshot();
            for (String name : TinyModel.NAMES) {
                assertArrayEquals(expected.get(name), got.get(name), name);
                assertNotEquals(before.get(name)[0], got.get(name)[0], name + " moved");
            }
            assertEquals(1, opt.stepCount());
        }
    }

    @Test
    void raise_refusesTheStep_changingNothing_andNamesTheParameter() {
        try (NDManager manager = NDManager.newBaseManager()) {
            TinyModel model = new TinyModel(manager, true);
            MuonAdamW opt = MuonAdamW.builder().optBlock(model.block).optNonFinitePolicy(NonFinitePolicy.RAISE)
                    .build();
            Map<String, float[]> before = model.snapshot();
            model.backward(model.gradients(1, "02out_weight", Float.NaN));
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> model.step(opt, order("02out_weight", true)));
            assertEquals("the gradient of parameter '02out_weight' holds NaN or Inf (nonFinitePolicy RAISE); nothing "
                    + "was changed", e.getMessage());
            Map<String, float[]> after = model.snapshot();
            for (String name : TinyModel.NAMES) {
                assertArrayEquals(before.get(name), after.get(name), name);
            }
            assertTrue(Float.isNaN(model.gradientSnapshot().get("02out_weight")[3]), "the gradients are kept");
            assertEquals(0, opt.stepCount());
        }
    }

    @Test
    void ignore_letsTheNaNIn_asPyTorchDoes() {
        try (NDManager manager = NDManager.newBaseManager()) {
            TinyModel model = new TinyModel(manager, true);
            MuonAdamW opt = MuonAdamW.builder().optBlock(model.block).optNonFinitePolicy(NonFinitePolicy.IGNORE)
                    .build();
            model.backward(model.gradients(1, "01hidden_weight", Float.NaN));
            model.step(opt, TinyModel.NAMES);
            Map<String, float[]> after = model.snapshot();
            assertTrue(Float.isNaN(after.get("01hidden_weight")[0]), "Newton-Schulz spreads the NaN over the matrix");
            assertFalse(Float.isNaN(after.get("01hidden_bias")[0]));
            assertEquals(1, opt.stepCount());
        }
    }

    /**
     * Gradients not on the arrays (no backward) cannot be read at the step's first call: a bad one found later
     * skips only its own parameter under SKIP, and RAISE says that earlier updates were applied.
     */
    @Test
    void aGradientTheFirstCallCouldNotSee_skipsOnlyItsParameter_orRaisesSayingSo() {
        try (NDManager manager = NDManager.newBaseManager()) {
            TinyModel model = new TinyModel(manager, false);
            MuonAdamW skip = MuonAdamW.builder().optBlock(model.block).build();
            Map<String, float[]> before = model.snapshot();
            model.step(skip, TinyModel.NAMES, model.gradients(1, "01hidden_bias", Float.NaN));
            Map<String, float[]> after = model.snapshot();
            assertArrayEquals(before.get("01hidden_bias"), after.get("01hidden_bias"));
            assertNotEquals(before.get("01hidden_weight")[0], after.get("01hidden_weight")[0]);
            assertEquals(1, skip.stepCount());

            TinyModel other = new TinyModel(manager, false);
            MuonAdamW raise = MuonAdamW.builder().optBlock(other.block).optNonFinitePolicy(NonFinitePolicy.RAISE)
                    .build();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> other.step(raise,
                    TinyModel.NAMES, other.gradients(1, "01hidden_bias", Float.NaN)));
            assertEquals("the gradient of parameter '01hidden_bias' on cpu() holds NaN or Inf (nonFinitePolicy "
                    + "RAISE); 1 updates of this step were applied before DJL handed it over", e.getMessage());
        }
    }

    @Test
    void callOrder_doesNotChangeTheResult() {
        try (NDManager manager = NDManager.newBaseManager()) {
            List<Map<String, float[]>> results = new ArrayList<>();
            for (long seed = 0; seed < 3; seed++) {
                TinyModel model = new TinyModel(manager, true);
                MuonAdamW opt = MuonAdamW.builder().optBlock(model.block).build();
                java.util.Random random = new java.util.Random(seed);
                for (int step = 1; step <= 3; step++) {
                    List<String> order = new ArrayList<>(TinyModel.NAMES);
                    Collections.shuffle(order, random);
                    model.backward(model.gradients(step, null, 0));
                    model.step(opt, order);
                }
                assertEquals(3, opt.stepCount());
                results.add(model.snapshot());
            }
            for (String name : TinyModel.NAMES) {
                assertArrayEquals(results.get(0).get(name), results.get(1).get(name), name);
                assertArrayEquals(results.get(0).get(name), results.get(2).get(name), name);
            }
        }
    }
}
