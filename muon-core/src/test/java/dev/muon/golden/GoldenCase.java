package dev.muon.golden;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One case of {@code shared/golden} (format {@code muon-golden/1}): hyperparameters, parameter declarations and
 * tensors, as parsed by {@link GoldenReader}. Tensors are kept as doubles, bit-exact.
 */
public final class GoldenCase {
    /** A {@code param:} line. */
    public record Param(String name, long[] shape, String optimizer) {
    }

    /** A {@code tensor:} block. */
    public record Entry(String field, String param, int step, long[] shape, double[] data) {
    }

    final String name;
    final String kind;
    final Map<String, String> hyper = new LinkedHashMap<>();
    final List<Param> params = new ArrayList<>();
    final List<Entry> tensors = new ArrayList<>();
    long[] shape;

    GoldenCase(String name, String kind) {
        this.name = name;
        this.kind = kind;
    }

    public String name() {
        return name;
    }

    public String kind() {
        return kind;
    }

    /** The {@code shape:} of a newton_schulz case. */
    public long[] shape() {
        return shape.clone();
    }

    public List<Param> params() {
        return Collections.unmodifiableList(params);
    }

    public double number(String key) {
        return Double.parseDouble(require(key));
    }

    public int integer(String key) {
        return Integer.parseInt(require(key));
    }

    public boolean bool(String key) {
        return Boolean.parseBoolean(require(key));
    }

    public String text(String key) {
        return require(key);
    }

    /** The tensor with this field, param and step (step 0 and param null where the file has none). */
    public Entry tensor(String field, String param, int step) {
        for (Entry e : tensors) {
            if (e.field.equals(field) && java.util.Objects.equals(e.param, param) && e.step == step) {
                return e;
            }
        }
        throw new IllegalStateException(name + ": no tensor field=" + field + " param=" + param + " step=" + step);
    }

    private String require(String key) {
        String v = hyper.get(key);
        if (v == null) {
            throw new IllegalStateException(name + ": no hyperparameter " + key);
        }
        return v;
    }

    @Override
    public String toString() {
        return name;
    }
}
