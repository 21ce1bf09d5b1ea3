package dev.muon.djl;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Three parameters in a block, as a model would hold them: {@code 01hidden_weight} (6x6, Muon),
 * {@code 01hidden_bias} (6, AdamW) and {@code 02out_weight} (3x6, AdamW: a head by name). Gradients come from a
 * backward pass, so that they sit on the arrays as a trainer leaves them, or are handed over without one.
 */
final class TinyModel {
    static final List<String> NAMES = List.of("01hidden_weight", "01hidden_bias", "02out_weight");

    final ParamBlock block;
    final Map<String, NDArray> arrays = new LinkedHashMap<>();
    final Map<String, String> ids = new LinkedHashMap<>();
    private final NDManager manager;

    /**
     * Builds the model with fixed values.
     *
     * @param manager  the manager of the arrays
     * @param autograd whether the arrays take gradients from a backward pass
     */
    TinyModel(NDManager manager, boolean autograd) {
        this.manager = manager;
        NDArray w1 = values(manager, new Shape(6, 6), 1);
        NDArray b1 = values(manager, new Shape(6), 2);
        NDArray w2 = values(manager, new Shape(3, 6), 3);
        for (NDArray a : List.of(w1, b1, w2)) {
            a.setRequiresGradient(autograd);
        }
        block = new ParamBlock()
                .child("hidden", new ParamBlock().param("weight", w1).param("bias", b1))
                .child("out", new ParamBlock().param("weight", w2));
        block.getParameters().forEach(p -> {
            arrays.put(p.getKey(), p.getValue().getArray());
            ids.put(p.getKey(), p.getValue().getId());
        });
    }

    /** Deterministic float32 values of a shape: a fixed, well-spread pattern from a seed. */
    static NDArray values(NDManager manager, Shape shape, int seed) {
        float[] data = new float[(int) shape.size()];
        for (int i = 0; i < data.length; i++) {
            data[i] = (float) Math.sin(seed * 1.7 + i * 0.91) * (1 + (i % 3));
        }
        return manager.create(data, shape);
    }

    /** The gradients of a step: a fixed pattern, with {@code bad} at element 3 of parameter {@code badName}. */
    Map<String, NDArray> gradients(int step, String badName, float bad) {
        Map<String, NDArray> grads = new LinkedHashMap<>();
        int seed = 10 * step;
        for (Map.Entry<String, NDArray> e : arrays.entrySet()) {
            NDArray g = values(manager, e.getValue().getShape(), ++seed);
            if (e.getKey().equals(badName)) {
                float[] data = g.toFloatArray();
                data[3] = bad;
                g = manager.create(data, g.getShape());
            }
            grads.put(e.getKey(), g);
        }
        return grads;
    }

    /** Puts {@code grads} on the arrays with a backward pass of {@code Σ sum(p ⊙ g)}, then frees them. */
    void backward(Map<String, NDArray> grads) {
        try (ai.djl.ndarray.NDScope scope = new ai.djl.ndarray.NDScope();
             GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            scope.suppressNotUsedWarning();
            grads.values().forEach(ai.djl.ndarray.NDScope::register);
            NDArray loss = null;
            for (Map.Entry<String, NDArray> e : arrays.entrySet()) {
                NDArray term = e.getValue().mul(grads.get(e.getKey())).sum();
                loss = loss == null ? term : loss.add(term);
            }
            collector.backward(loss);
        }
    }

    /** Every array's values, by name. */
    Map<String, float[]> snapshot() {
        Map<String, float[]> out = new LinkedHashMap<>();
        arrays.forEach((name, a) -> out.put(name, a.toType(DataType.FLOAT32, true).toFloatArray()));
        return out;
    }

    /** Every array's gradient values, by name. */
    Map<String, float[]> gradientSnapshot() {
        Map<String, float[]> out = new LinkedHashMap<>();
        arrays.forEach((name, a) -> out.put(name, a.getGradient().toFloatArray()));
        return out;
    }

    /**
     * Hands every parameter to {@code optimizer} in {@code order}, each with its own gradient, whose handle is then
     * closed, as DJL's {@code ParameterServer} does.
     */
    void step(ai.djl.training.optimizer.Optimizer optimizer, List<String> order) {
        for (String name : order) {
            NDArray weight = arrays.get(name);
            try (NDArray grad = weight.getGradient()) {
                optimizer.update(ids.get(name), weight, grad);
            }
        }
    }

    /** Hands every parameter to {@code optimizer} in {@code order} with the given gradients (no backward). */
    void step(ai.djl.training.optimizer.Optimizer optimizer, List<String> order, Map<String, NDArray> grads) {
        List<String> names = new ArrayList<>(order);
        for (String name : names) {
            optimizer.update(ids.get(name), arrays.get(name), grads.get(name));
        }
    }
}
