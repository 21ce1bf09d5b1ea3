package dev.muon.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.muon.MuonConfig;
import dev.muon.OptimizerKind;
import dev.muon.golden.GoldenCase;
import dev.muon.golden.GoldenConfigs;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replays the golden {@code hybrid_default} case through {@link MuonAdamW} on a block shaped like the case's model
 * ({@code embed}, {@code mlp} with {@code fc1} and {@code fc2}, {@code lm_head}), with the parameters handed over
 * in a new random order at every step and, on request, to a second device after the first, as DJL's
 * {@code LocalParameterServer} does; every copy must follow the golden values.
 */
final class HybridReplay {
    /** The case's parameter names and DJL's names of the same parameters in the replay's block. */
    static final Map<String, String> DJL_NAMES = Map.of(
            "embed.weight", "01embed_weight",
            "layers.0.mlp.fc1.weight", "02mlp_01fc1_weight",
            "layers.0.mlp.fc1.bias", "02mlp_01fc1_bias",
            "layers.0.mlp.fc2.weight", "02mlp_02fc2_weight",
            "lm_head.weight", "03lm_head_weight");

    private HybridReplay() {
    }

    /**
     * Runs the case.
     *
     * @param c          the golden case
     * @param precision  the dtype and tolerances
     * @param devices    the devices of the copies (the first is the arrays' own; later ones are reported by a view
     *                   of another copy on the same CPU)
     * @return the optimizer after the run
     */
    static MuonAdamW replay(GoldenCase c, GoldenPrecision precision, List<Device> devices) {
        try (NDManager manager = NDManager.newBaseManager()) {
            // One set of arrays per device; the block holds the first.
            List<Map<String, NDArray>> copies = new ArrayList<>();
            for (int d = 0; d < devices.size(); d++) {
                Map<String, NDArray> arrays = new LinkedHashMap<>();
                for (GoldenCase.Param p : c.params()) {
                    NDArray a = manager.create(c.tensor("param", p.name(), 0).data(), new Shape(p.shape()))
                            .toType(precision.dtype(), false);
                    arrays.put(p.name(), d == 0 ? a : onDevice(a, devices.get(d)));
                }
                copies.add(arrays);
            }
            Map<String, NDArray> first = copies.get(0);
            ParamBlock block = new ParamBlock()
                    .child("embed", new ParamBlock().param("weight", first.get("embed.weight")))
                    .child("mlp", new ParamBlock()
                            .child("fc1", new ParamBlock().param("weight", first.get("layers.0.mlp.fc1.weight"))
                                    .param("bias", first.get("layers.0.mlp.fc1.bias")))
                            .child("fc2", new ParamBlock().param("weight", first.get("layers.0.mlp.fc2.weight"))))
                    .child("lm_head", new ParamBlock().param("weight", first.get("lm_head.weight")));
            MuonAdamW opt = MuonAdamW.builder().optBlock(block).optMuon(GoldenConfigs.muon(c, precision.ns()))
                    .optAdamW(GoldenConfigs.adamW(c)).build();
            Map<String, String> ids = new LinkedHashMap<>();
            block.getParameters().forEach(pair -> ids.put(pair.getKey(), pair.getValue().getId()));
            assertEquals(new java.util.HashSet<>(DJL_NAMES.values()), ids.keySet());

            Random order = new Random(7);
            int steps = c.integer("num_steps");
            for (int k = 1; k <= steps; k++) {
                List<Map<String, double[]>> before = new ArrayList<>();
                for (Map<String, NDArray> copy : copies) {
                    Map<String, double[]> values = new LinkedHashMap<>();
                    copy.forEach((name, array) -> values.put(name, Measures.values(array)));
                    before.add(values);
                }
                List<GoldenCase.Param> shuffled = new ArrayList<>(c.params());
                Collections.shuffle(shuffled, order);
                for (GoldenCase.Param p : shuffled) {
                    NDArray grad = manager.create(c.tensor("grad", p.name(), k).data(), new Shape(p.shape()))
                            .toType(precision.dtype(), false);
                    for (Map<String, NDArray> copy : copies) {
                        opt.update(ids.get(DJL_NAMES.get(p.name())), copy.get(p.name()), grad);
                    }
                }
                assertEquals(k, opt.stepCount(), "one step per round, whatever the number of devices");
                for (int d = 0; d < copies.size(); d++) {
                    check(c, precision, opt, k, devices.get(d), copies.get(d), before.get(d));
                }
            }
            return opt;
        }
    }

    private static void check(GoldenCase c, GoldenPrecision precision, MuonAdamW opt, int k, Device device,
                              Map<String, NDArray> copy, Map<String, double[]> before) {
        MuonConfig muon = opt.muonConfig();
        for (GoldenCase.Param p : c.params()) {
            String name = DJL_NAMES.get(p.name());
            String where = c.name() + " " + precision + " " + device + " step " + k + " " + p.name();
            double[] after = Measures.values(copy.get(p.name()));
            double paramError = Measures.maxAbsError(after, c.tensor("param", p.name(), k).data());
            assertTrue(paramError <= precision.paramAbs(), where + ": param abs error " + paramError);
            if (p.optimizer().equals("muon")) {
                double bufferError = Measures.relativeError(
                        Measures.values(opt.momentumBuffer(name, device).orElseThrow()),
                        c.tensor("momentum_buffer", p.name(), k).data());
                assertTrue(bufferError <= precision.stateRel(), where + ": momentum_buffer rel error " + bufferError);
                double updateError = Measures.relativeError(MuonGoldenTest.recoveredUpdate(before.get(p.name()),
                        after, muon, p.shape()), c.tensor("orthogonalized_update", p.name(), k).data());
                assertTrue(updateError <= precision.updateRel(), where + ": orthogonalized_update rel error "
                        + updateError);
            } else {
                NDList moments = opt.adamWMoments(name, device).orElseThrow();
                double mError = Measures.relativeError(Measures.values(moments.get(0)),
                        c.tensor("exp_avg", p.name(), k).data());
                double vError = Measures.relativeError(Measures.values(moments.get(1)),
                        c.tensor("exp_avg_sq", p.name(), k).data());
                assertTrue(mError <= precision.stateRel(), where + ": exp_avg rel error " + mError);
                assertTrue(vError <= precision.stateRel(), where + ": exp_avg_sq rel error " + vError);
            }
            assertEquals(p.optimizer().equals("muon") ? OptimizerKind.MUON : OptimizerKind.ADAMW,
                    opt.assignment().rows().stream().filter(r -> r.name().equals(name)).findFirst().orElseThrow()
                            .optimizer(), where);
        }
    }

    /**
     * The same array, reported as being on {@code device}: DJL counts every CPU index as the one CPU, so a second
     * device on a machine without GPUs is a view that only says so (a GPU). Every call but {@code getDevice} goes to
     * the array, whose own methods (such as {@code zerosLike}) keep working on the CPU.
     */
    static NDArray onDevice(NDArray array, Device device) {
        return (NDArray) Proxy.newProxyInstance(NDArray.class.getClassLoader(), new Class<?>[] {NDArray.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getDevice") && method.getParameterCount() == 0) {
                        return device;
                    }
                    try {
                        return method.invoke(array, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
