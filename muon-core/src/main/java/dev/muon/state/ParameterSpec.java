package dev.muon.state;

import dev.muon.BufferSpec;
import dev.muon.OptimizerKind;
import dev.muon.RowSplit;
import dev.muon.internal.TorchNatives;
import org.bytedeco.pytorch.global.torch.ScalarType;

import java.util.Arrays;
import java.util.Objects;

/**
 * What an optimizer holds one named parameter as, apart from any values: its name, which optimizer updates it and
 * in which group, its shape and dtype, the name it is tied to (for a second name of a tied weight, which has no
 * state of its own) and its row split. Two states fit each other only if their specs are equal, entry by entry.
 *
 * @param name      the parameter's name ({@code named_parameters()}), or {@code "parameter i of group g"} for a
 *                  {@link dev.muon.Muon} built from unnamed tensors
 * @param optimizer which optimizer updates it ({@link OptimizerKind#ADAMW} for a tied name)
 * @param group     the Muon group; for AdamW, 0 for the decayed group and 1 for the group without weight decay
 *                  ({@code noWeightDecayBelow2D}); 0 for a tied name
 * @param shape     the parameter's sizes
 * @param dtype     the parameter's dtype
 * @param tiedTo    for a tied name, the name that holds the state; null otherwise
 * @param rowSplit  the row split of a Muon parameter, null for none
 */
public record ParameterSpec(String name, OptimizerKind optimizer, int group, long[] shape, ScalarType dtype,
                            String tiedTo, RowSplit rowSplit) {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /**
     * Validates and copies.
     *
     * @throws IllegalArgumentException if the group is negative, a size is negative, a tied name has a row split
     *                                  or is not on AdamW, or an AdamW parameter has a row split
     * @throws NullPointerException     if the name, optimizer, shape or dtype is null
     */
    public ParameterSpec {
        shape = CheckpointDocument.Parameter.checkPlacement(name, optimizer, group, shape, dtype, tiedTo, rowSplit);
        dtype = canonical(dtype);
    }

    /**
     * The enum constant of a type: the bindings hand out scalar types made in native code, whose {@code name()} is
     * not set; the constant of the same value has it.
     */
    private static ScalarType canonical(ScalarType type) {
        for (ScalarType t : ScalarType.values()) {
            if (t.value == type.value) {
                return t;
            }
        }
        return type;
    }

    /**
     * A Muon parameter.
     *
     * @param name     its name
     * @param group    its Muon group
     * @param shape    its sizes
     * @param dtype    its dtype
     * @param rowSplit its row split, or null
     * @return the spec
     */
    public static ParameterSpec muon(String name, int group, long[] shape, ScalarType dtype, RowSplit rowSplit) {
        return new ParameterSpec(name, OptimizerKind.MUON, group, shape, dtype, null, rowSplit);
    }

    /**
     * An AdamW parameter.
     *
     * @param name        its name
     * @param undecayed   whether it is in the group without weight decay
     * @param shape       its sizes
     * @param dtype       its dtype
     * @return the spec
     */
    public static ParameterSpec adamW(String name, boolean undecayed, long[] shape, ScalarType dtype) {
        return new ParameterSpec(name, OptimizerKind.ADAMW, undecayed ? 1 : 0, shape, dtype, null, null);
    }

    /**
     * A second name of a tied weight.
     *
     * @param name   the name
     * @param tiedTo the name that holds the weight's state
     * @param shape  the weight's sizes
     * @param dtype  the weight's dtype
     * @return the spec
     */
    public static ParameterSpec tied(String name, String tiedTo, long[] shape, ScalarType dtype) {
        return new ParameterSpec(name, OptimizerKind.ADAMW, 0, shape, dtype,
                Objects.requireNonNull(tiedTo, "tiedTo must not be null"), null);
    }

    /**
     * The sizes.
     *
     * @return a copy
     */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /**
     * The shape of a declared buffer of this parameter.
     *
     * @param buffer the declaration
     * @return its sizes
     */
    public long[] shapeOf(BufferSpec buffer) {
        return buffer.shape().of(shape);
    }

    /**
     * The dtype a declared buffer of this parameter is kept in.
     *
     * @param buffer the declaration
     * @return its dtype
     */
    public ScalarType dtypeOf(BufferSpec buffer) {
        return scalarType(buffer.dtype().of(dtypeName(dtype)));
    }

    /**
     * Whether a state may hold a declared buffer of this parameter in a dtype ({@link BufferSpec.Dtype#accepts}).
     *
     * @param buffer the declaration
     * @param held   the dtype a state holds it in
     * @return true if a restore takes it
     */
    public boolean accepts(BufferSpec buffer, ScalarType held) {
        return buffer.dtype().accepts(dtypeName(held), dtypeName(dtype));
    }

    /**
     * A dtype's name in declarations and files: {@code float32}, {@code float64}, {@code bfloat16},
     * {@code float16}, else libtorch's name in lower case.
     *
     * @param type the dtype
     * @return its name
     */
    public static String dtypeName(ScalarType type) {
        if (type.value == ScalarType.Float.value) {
            return "float32";
        }
        if (type.value == ScalarType.Double.value) {
            return "float64";
        }
        if (type.value == ScalarType.BFloat16.value) {
            return "bfloat16";
        }
        if (type.value == ScalarType.Half.value) {
            return "float16";
        }
        return canonical(type).name().toLowerCase(java.util.Locale.ROOT);
    }

    /**
     * The dtype of a name {@link #dtypeName} gives.
     *
     * @param name the name
     * @return the dtype
     * @throws IllegalArgumentException if no dtype has the name
     */
    public static ScalarType scalarType(String name) {
        for (ScalarType t : ScalarType.values()) {
            if (dtypeName(t).equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("no dtype is named '" + name + "'");
    }

    /**
     * Whether this is a second name of a tied weight (no state of its own).
     *
     * @return whether {@link #tiedTo()} is set
     */
    public boolean isTied() {
        return tiedTo != null;
    }

    /**
     * Equal when every component is, the shape by content and the dtype by its value.
     *
     * @param o another object
     * @return whether both describe the same parameter
     */
    @Override
    public boolean equals(Object o) {
        return o instanceof ParameterSpec s && name.equals(s.name) && optimizer == s.optimizer && group == s.group
                && Arrays.equals(shape, s.shape) && dtype.value == s.dtype.value && Objects.equals(tiedTo, s.tiedTo)
                && Objects.equals(rowSplit, s.rowSplit);
    }

    /**
     * A hash consistent with {@link #equals}.
     *
     * @return the hash
     */
    @Override
    public int hashCode() {
        return Objects.hash(name, optimizer, group, Arrays.hashCode(shape), dtype.value, tiedTo, rowSplit);
    }

    /**
     * The spec as one line: name, optimizer, group, shape, dtype, and the tie or split where set.
     *
     * @return the text
     */
    @Override
    public String toString() {
        return "'" + name + "' " + optimizer + " group " + group + " " + Arrays.toString(shape) + " " + dtype
                + (tiedTo == null ? "" : " tied to '" + tiedTo + "'") + (rowSplit == null ? "" : " " + rowSplit);
    }
}
