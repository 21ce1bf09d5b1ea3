package dev.muon.state;

import dev.muon.BufferSpec;
import dev.muon.internal.TorchNatives;

import java.util.Set;

/**
 * The one owner of a checkpoint's tensor-name layout, {@code <kind>/<parameter>}: a parameter's value, each of its
 * declared Muon buffers under the buffer's key ({@link BufferSpec#key()}), and AdamW's two moments. Both codecs, the
 * fit check and every binding name their tensors through it; nothing else spells a kind or the separator.
 *
 * <pre>{@code
 * TensorNames.value("fc.weight");                                   // "value/fc.weight"
 * TensorNames.buffer(UpdateRecipe.MOMENTUM, "fc.weight");           // "momentum/fc.weight"
 * }</pre>
 */
final class TensorNames {
    static {
        // First, in case this is the first type of ours a program touches: see TorchNatives.
        TorchNatives.extract();
    }

    /** The kind of a parameter's value. */
    public static final String VALUE = "value";
    /** The kind of AdamW's first moment. */
    public static final String EXP_AVG = "exp_avg";
    /** The kind of AdamW's second moment. */
    public static final String EXP_AVG_SQ = "exp_avg_sq";
    /** The kinds every file may hold; a parameter's Muon buffers add their declared keys. */
    static final Set<String> FIXED_KINDS = Set.of(VALUE, EXP_AVG, EXP_AVG_SQ);

    private TensorNames() {
    }

    /**
     * A tensor's name.
     *
     * @param kind      {@link #VALUE}, {@link #EXP_AVG}, {@link #EXP_AVG_SQ} or a buffer's key
     * @param parameter the parameter's name
     * @return {@code kind/parameter}
     */
    public static String of(String kind, String parameter) {
        return kind + "/" + parameter;
    }

    /**
     * A parameter's value.
     *
     * @param parameter the parameter's name
     * @return its tensor's name
     */
    public static String value(String parameter) {
        return of(VALUE, parameter);
    }

    /**
     * One of a parameter's declared Muon buffers.
     *
     * @param buffer    the declaration
     * @param parameter the parameter's name
     * @return its tensor's name
     */
    public static String buffer(BufferSpec buffer, String parameter) {
        return of(buffer.key(), parameter);
    }

    /**
     * AdamW's first moment of a parameter.
     *
     * @param parameter the parameter's name
     * @return its tensor's name
     */
    public static String expAvg(String parameter) {
        return of(EXP_AVG, parameter);
    }

    /**
     * AdamW's second moment of a parameter.
     *
     * @param parameter the parameter's name
     * @return its tensor's name
     */
    public static String expAvgSq(String parameter) {
        return of(EXP_AVG_SQ, parameter);
    }
}
