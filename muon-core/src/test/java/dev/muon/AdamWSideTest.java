package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.state.OptimizerState;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.OptimizerParamGroup;
import org.bytedeco.pytorch.OptimizerParamGroupVector;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code MuonAdamW}'s AdamW side ({@link AdamWUpdate}) against libtorch's {@code AdamW} over copies of the same
 * parameters, in every dtype users train in: equal bit for bit after every step, over enough steps that the bias
 * corrections take hundreds of powers, through lr changes, steps where a parameter has no gradient (so that the
 * parameters' update counts differ within a step), both param-group layouts, and a restore part-way.
 */
@ExtendWith(NativeScopePerTest.class)
class AdamWSideTest {
    private static final int STEPS = 360;

    static Stream<Arguments> cases() {
        Stream.Builder<Arguments> cases = Stream.builder();
        for (ScalarType dtype : new ScalarType[]{ScalarType.Float, ScalarType.Double, ScalarType.BFloat16}) {
            for (boolean twoGroups : new boolean[]{false, true}) {
                cases.add(Arguments.of(dtype, twoGroups, AdamWConfig.defaults().withLr(3e-3).withWeightDecay(0.1)));
                cases.add(Arguments.of(dtype, twoGroups,
                        AdamWConfig.defaults().withLr(1e-2).withBetas(0.9, 0.99).withWeightDecay(0)));
            }
        }
        return cases.build();
    }

    @ParameterizedTest(name = "{0}, two groups {1}, {2}")
    @MethodSource("cases")
    void matchesLibtorchAdamW_bitForBit_afterEveryStep(ScalarType dtype, boolean twoGroups, AdamWConfig config) {
        Side side = Side.of(dtype, twoGroups, config);
        MuonAdamW opt = side.build();
        for (int k = 0; k < STEPS; k++) {
            side.stepBoth(opt, k);
            side.assertEqual(k);
        }
        long biasUpdates = STEPS - (STEPS + 6) / 7;
        assertEquals(biasUpdates, opt.adamWState("hidden.bias").orElseThrow().step());
        assertEquals(STEPS, opt.adamWState("embed.weight").orElseThrow().step());
    }

    @ParameterizedTest(name = "{0}, two groups {1}, {2}")
    @MethodSource("cases")
    void restoredPartWay_continuesAsLibtorchAdamW(ScalarType dtype, boolean twoGroups, AdamWConfig config) {
        Side side = Side.of(dtype, twoGroups, config);
        MuonAdamW first = side.build();
        for (int k = 0; k < 20; k++) {
            side.stepBoth(first, k);
        }
        OptimizerState saved = first.state();
        // A fresh optimizer over the same tensors, at other moments: the restore must replace all of them.
        MuonAdamW second = side.build();
        TestModels.setGradients(side.named, 99);
        second.step();
        second.restore(saved);
        for (int k = 20; k < 40; k++) {
            side.stepBoth(second, k);
            side.assertEqual(k);
        }
    }

    /**
     * The parameters {@code MuonAdamW} steps, and libtorch's AdamW over copies of its AdamW side laid out as it lays
     * them out: the decayed group, then (two groups) the rest.
     */
    private record Side(Map<String, Tensor> named, Tensor embed, Tensor bias, AdamW reference, boolean twoGroups,
                        AdamWConfig config) {
        static Side of(ScalarType dtype, boolean twoGroups, AdamWConfig config) {
            Map<String, Tensor> named = new LinkedHashMap<>();
            named.put("hidden.weight", torch.randn(6, 5).to(dtype).requires_grad_(true));
            named.put("hidden.bias", torch.randn(6).to(dtype).requires_grad_(true));
            named.put("embed.weight", torch.randn(7, 5).to(dtype).requires_grad_(true));
            Tensor embed = named.get("embed.weight").detach().clone().requires_grad_(true);
            Tensor bias = named.get("hidden.bias").detach().clone().requires_grad_(true);
            AdamW reference;
            if (twoGroups) {
                reference = new AdamW(new TensorVector(embed), config.toOptions());
                reference.add_param_group(new OptimizerParamGroup(new TensorVector(bias)));
                new AdamWOptions(reference.param_groups().get(1).options()).weight_decay().put(0.0);
            } else {
                reference = new AdamW(new TensorVector(bias, embed), config.toOptions());
            }
            return new Side(named, embed, bias, reference, twoGroups, config);
        }

        MuonAdamW build() {
            return MuonAdamW.builder(named).adamW(config).noWeightDecayBelow2D(twoGroups).build();
        }

        /**
         * Step {@code k} on both: every seventh step the bias has no gradient; from step 100 both run at half the
         * lr.
         */
        void stepBoth(MuonAdamW opt, int k) {
            if (k == 100) {
                opt.setLr(MuonAdamW.ADAMW_GROUP, opt.adamWConfig().lr() / 2);
                OptimizerParamGroupVector groups = reference.param_groups();
                for (long g = 0; g < groups.size(); g++) {
                    groups.get(g).options().set_lr(opt.adamWConfig().lr());
                }
            }
            TestModels.setGradients(named, k);
            embed.mutable_grad().put(named.get("embed.weight").grad().clone());
            if (k % 7 == 0) {
                named.get("hidden.bias").mutable_grad().put(new Tensor());
                bias.mutable_grad().put(new Tensor());
            } else {
                bias.mutable_grad().put(named.get("hidden.bias").grad().clone());
            }
            opt.step();
            reference.step();
        }

        void assertEqual(int k) {
            assertTrue(named.get("embed.weight").equal(embed), "embed.weight after step " + (k + 1));
            assertTrue(named.get("hidden.bias").equal(bias), "hidden.bias after step " + (k + 1));
        }
    }
}
