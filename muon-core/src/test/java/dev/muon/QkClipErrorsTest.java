package dev.muon;

import dev.muon.golden.NativeScopePerTest;
import dev.muon.golden.Tensors;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static dev.muon.ErrorRows.assertRejected;
import static dev.muon.ErrorRows.row;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Every rejected input of {@link QkClip}: registration, reports, and attaching it to an optimizer. */
@ExtendWith(NativeScopePerTest.class)
class QkClipErrorsTest {
    private static final QkClip.Heads TWO_BY_FOUR = QkClip.Heads.of(2, 4);

    /** q [8, 6], k [8, 6], qkv [24, 6], bias [8], ids (integer) [8, 6], mlp [5, 6]. */
    static Map<String, Tensor> model() {
        Map<String, Tensor> m = new LinkedHashMap<>();
        m.put("q", torch.randn(8, 6).requires_grad_(true));
        m.put("k", torch.randn(8, 6).requires_grad_(true));
        m.put("qkv", torch.randn(24, 6).requires_grad_(true));
        m.put("bias", torch.randn(8).requires_grad_(true));
        m.put("ids", torch.ones(8, 6).to(torch.ScalarType.Long));
        m.put("mlp", torch.randn(5, 6).requires_grad_(true));
        return m;
    }

    private static QkClip.Builder builder() {
        return QkClip.builder(model());
    }

    private static QkClip clip(Map<String, Tensor> m) {
        return QkClip.builder(m).layer("attn", "q", "k", TWO_BY_FOUR).build();
    }

    private static Tensor vec(double... values) {
        return Tensors.of(values, new long[]{values.length}, torch.ScalarType.Double);
    }

    static Stream<Arguments> invalidInputs() {
        return Stream.of(
                row("tau_zero_isRejected", () -> builder().tau(0), "tau must be finite and > 0, got 0.0"),
                row("tau_negative_isRejected", () -> builder().tau(-1), "tau must be finite and > 0, got -1.0"),
                row("tau_nan_isRejected", () -> builder().tau(Double.NaN), "tau must be finite and > 0, got NaN"),
                row("tau_infinite_isRejected", () -> builder().tau(Double.POSITIVE_INFINITY),
                        "tau must be finite and > 0, got Infinity"),
                row("alpha_negative_isRejected", () -> builder().alpha(-0.1), "alpha must be in [0, 1], got -0.1"),
                row("alpha_aboveOne_isRejected", () -> builder().alpha(1.5), "alpha must be in [0, 1], got 1.5"),
                row("alpha_nan_isRejected", () -> builder().alpha(Double.NaN), "alpha must be in [0, 1], got NaN"),
                row("queryHeads_zero_isRejected", () -> QkClip.Heads.of(0, 4), "queryHeads must be >= 1, got 0"),
                row("keyHeads_zero_isRejected", () -> QkClip.Heads.grouped(4, 0, 4), "keyHeads must be >= 1, got 0"),
                row("headDim_zero_isRejected", () -> QkClip.Heads.of(2, 0), "headDim must be >= 1, got 0"),
                row("keyHeads_notDividingQueryHeads_isRejected", () -> QkClip.Heads.grouped(4, 3, 2),
                        "keyHeads must divide queryHeads (each key head serves a group of query heads), got "
                                + "queryHeads=4 and keyHeads=3"),
                row("layerName_blank_isRejected", () -> builder().layer(" ", "q", "k", TWO_BY_FOUR),
                        "layer must be a non-blank name, got ' '"),
                row("layerName_null_isRejected", () -> builder().layer(null, "q", "k", TWO_BY_FOUR),
                        "layer must be a non-blank name, got null"),
                row("layerName_twice_isRejected", () -> builder().layer("attn", "q", "k", TWO_BY_FOUR)
                        .fusedLayer("attn", "qkv", TWO_BY_FOUR, 0, 8), "layer must be a new name; 'attn' is "
                        + "registered already"),
                row("query_unknownName_isRejected", () -> builder().layer("attn", "wq", "k", TWO_BY_FOUR),
                        "layer 'attn': query must name a parameter; 'wq' is not one (parameters: [q, k, qkv, bias, "
                                + "ids, mlp])"),
                row("key_unknownName_isRejected", () -> builder().layer("attn", "q", "wk", TWO_BY_FOUR),
                        "layer 'attn': key must name a parameter; 'wk' is not one (parameters: [q, k, qkv, bias, "
                                + "ids, mlp])"),
                row("query_vector_isRejected", () -> builder().layer("attn", "bias", "k", TWO_BY_FOUR),
                        "layer 'attn': query parameter 'bias' must be a matrix, got shape [8]"),
                row("key_integer_isRejected", () -> builder().layer("attn", "q", "ids", TWO_BY_FOUR),
                        "layer 'attn': key parameter 'ids' must be real floating point, got Long"),
                row("query_rowsNotHeadsTimesHeadDim_isRejected",
                        () -> builder().layer("attn", "q", "k", QkClip.Heads.of(2, 3)),
                        "layer 'attn': query parameter 'q' must have queryHeads·headDim = 6 rows, got shape [8, 6]"),
                row("key_rowsNotKeyHeadsTimesHeadDim_isRejected",
                        () -> builder().layer("attn", "q", "k", QkClip.Heads.grouped(2, 1, 4)),
                        "layer 'attn': key parameter 'k' must have keyHeads·headDim = 4 rows, got shape [8, 6]"),
                row("queryAndKey_sameParameter_isRejected", () -> builder().layer("attn", "q", "q", TWO_BY_FOUR),
                        "layer 'attn': query and key are the same parameter 'q'; register a fused weight with "
                                + "fusedLayer(..)"),
                row("fused_negativeFirstRow_isRejected", () -> builder().fusedLayer("attn", "qkv", TWO_BY_FOUR, -1, 8),
                        "layer 'attn': queryFirstRow must leave 8 rows inside parameter 'qkv' of shape [24, 6], got -1"),
                row("fused_keyRangeOverruns_isRejected", () -> builder().fusedLayer("attn", "qkv", TWO_BY_FOUR, 0, 20),
                        "layer 'attn': keyFirstRow must leave 8 rows inside parameter 'qkv' of shape [24, 6], got 20"),
                row("fused_queryFirstRowNearLongMax_isRejected", () -> builder().fusedLayer("attn", "qkv", TWO_BY_FOUR,
                        Long.MAX_VALUE - 4, 8), "layer 'attn': queryFirstRow must leave 8 rows inside parameter 'qkv' "
                        + "of shape [24, 6], got 9223372036854775803"),
                row("fused_keyFirstRowAtLongMax_isRejected", () -> builder().fusedLayer("attn", "qkv", TWO_BY_FOUR,
                        0, Long.MAX_VALUE), "layer 'attn': keyFirstRow must leave 8 rows inside parameter 'qkv' of "
                        + "shape [24, 6], got 9223372036854775807"),
                row("fused_rangesOverlap_isRejected", () -> builder().fusedLayer("attn", "qkv", TWO_BY_FOUR, 0, 4),
                        "layer 'attn': the query rows [0, 8) and key rows [4, 12) of parameter 'qkv' must not overlap"),
                row("rows_registeredByTwoLayers_isRejected", () -> builder().layer("a", "q", "k", TWO_BY_FOUR)
                        .layer("c", "k", "q", TWO_BY_FOUR), "layer 'c': rows [0, 8) of parameter 'k' belong to "
                        + "layer 'a' already; each row is rescaled by one head only"),
                row("rows_ofAnotherLayer_isRejected", () -> builder().layer("a", "q", "k", TWO_BY_FOUR)
                        .fusedLayer("b", "qkv", TWO_BY_FOUR, 0, 8).fusedLayer("c", "qkv", QkClip.Heads.grouped(2, 1,
                                4), 16, 12), "layer 'c': rows [12, 16) of parameter 'qkv' belong to layer 'b' "
                        + "already; each row is rescaled by one head only"),
                row("layers_none_isRejected", () -> builder().build(),
                        "layers must not be empty: register at least one attention layer with layer(..) or "
                                + "fusedLayer(..)"),
                row("report_unknownLayer_isRejected", () -> {
                    clip(model()).report("attn2", vec(1, 2));
                    return null;
                }, "layer must be a registered layer; 'attn2' is not (registered: [attn])"),
                row("report_wrongHeadCount_isRejected", () -> {
                    clip(model()).report("attn", vec(1, 2, 3));
                    return null;
                }, "maxLogits of layer 'attn' must have shape [2] (one value per query head), got [3]"),
                row("report_matrix_isRejected", () -> {
                    clip(model()).report("attn", torch.ones(2, 1));
                    return null;
                }, "maxLogits of layer 'attn' must have shape [2] (one value per query head), got [2, 1]"),
                row("report_integer_isRejected", () -> {
                    clip(model()).report("attn", torch.ones(2).to(torch.ScalarType.Long));
                    return null;
                }, "maxLogits of layer 'attn' must be a real floating tensor, got Long"),
                row("report_nan_isRejected", () -> {
                    clip(model()).report("attn", vec(3, Double.NaN));
                    return null;
                }, "maxLogits of layer 'attn' must be finite, got NaN for head 1"),
                row("report_infinity_isRejected", () -> {
                    clip(model()).report("attn", vec(Double.POSITIVE_INFINITY, 3));
                    return null;
                }, "maxLogits of layer 'attn' must be finite, got Infinity for head 0"),
                row("report_undefined_isRejected", () -> {
                    clip(model()).report("attn", new Tensor());
                    return null;
                }, "maxLogits of layer 'attn' must be a defined tensor"),
                row("lastGammas_unknownLayer_isRejected", () -> clip(model()).lastGammas("mlp"),
                        "layer must be a registered layer; 'mlp' is not (registered: [attn])"),
                row("muon_clipOfAnotherTensor_isRejected", () -> {
                    Map<String, Tensor> m = model();
                    return Muon.builder().addGroup(List.of(m.get("q"), m.get("mlp")), MuonConfig.defaults())
                            .qkClip(clip(m)).build();
                }, "qkClip: parameter 'k' of layer 'attn' is not a trainable parameter of this Muon"),
                row("muonAdamW_clipOfAFrozenTensor_isRejected", () -> {
                    Map<String, Tensor> m = model();
                    m.remove("ids");
                    m.get("q").requires_grad_(false);
                    return MuonAdamW.builder(m).qkClip(clip(m)).build();
                }, "qkClip: parameter 'q' of layer 'attn' is not a trainable parameter of this MuonAdamW"),
                row("muonAdamW_clipOfAnotherModel_isRejected", () -> {
                    Map<String, Tensor> m = model();
                    m.remove("ids");
                    return MuonAdamW.builder(m).qkClip(clip(model())).build();
                }, "qkClip: parameter 'q' of layer 'attn' is not a trainable parameter of this MuonAdamW"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidInputs")
    void invalidInput_isRejectedWithMessage(String name, Supplier<Object> call, String message) {
        assertRejected(call, message);
    }

    /** A rejected registration leaves the builder as it was: the layers before it, and the settings, still build. */
    @Test
    void rejectedRegistration_leavesTheBuilderAsItWas() {
        QkClip.Builder b = builder().tau(5).layer("a", "q", "k", TWO_BY_FOUR);
        assertThrows(IllegalArgumentException.class, () -> b.fusedLayer("b", "qkv", TWO_BY_FOUR, 0, 4));
        assertThrows(IllegalArgumentException.class, () -> b.tau(-1));
        assertThrows(IllegalArgumentException.class, () -> b.alpha(2));
        QkClip clip = b.fusedLayer("b", "qkv", TWO_BY_FOUR, 0, 8).build();
        assertEquals(List.of("a", "b"), clip.layers());
        assertEquals(5, clip.tau());
        assertEquals(QkClip.DEFAULT_ALPHA, clip.alpha());
    }

    /** A rejected report of one layer keeps the other layers' reports and leaves the weights alone until the step. */
    @Test
    void rejectedReport_changesNoWeight() {
        Map<String, Tensor> m = model();
        m.remove("ids");
        QkClip clip = QkClip.builder(m).tau(1).layer("attn", "q", "k", TWO_BY_FOUR).build();
        double[] q = Tensors.values(m.get("q"));
        assertThrows(IllegalArgumentException.class, () -> clip.report("attn", vec(100, Double.NaN)));
        assertArrayEquals(q, Tensors.values(m.get("q")));
        assertArrayEquals(new double[]{1, 1}, clip.lastGammas("attn"));
    }
}
